package io.jccl.transport.tcp;

import io.jccl.DataType;
import io.jccl.buffer.Buf;
import io.jccl.transport.ArrayPool;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameFormatException;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Inbox;
import io.jccl.transport.PostedReceive;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * One established connection of the TCP transport, to one peer: frames on the wire ({@link FrameDescriptor}
 * followed by the payload in little-endian order), the sends to the peer, and a reader thread that moves whole
 * frames from it into this rank's {@link Inbox}.
 *
 * <p>The socket stays in blocking mode (a non-blocking socket and a selector cost a small call 10-25% more, measured
 * in docs/performance.md). A posted receive into little-endian memory is still filled from the socket with no copy
 * in between ({@link PostedReceive#fill(java.nio.channels.ReadableByteChannel, ByteBuffer)}), but only with bytes
 * the kernel already holds ({@link #waiting}), so the read never blocks under the receive's lock and a cancel never
 * waits for a peer; when nothing is there the reader waits in a read into its own buffer, outside the lock.
 *
 * <p>A frame with a wrong magic, version, dtype, source or an impossible length closes the connection with a
 * clear error and allocates nothing of the claimed size (payloads above one chunk are held in pieces until their
 * last byte arrives). A goodbye frame is the peer's departure; end of stream without one means the peer died:
 * every communicator over the transport is aborted with a message naming it.
 */
final class TcpConnection {
    /** The transport's logger: what a connection logs is the transport's. */
    private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);
    private static final int CHUNK_BYTES = 1 << 20;
    /**
     * Pieces of a large incoming frame held until its last byte: small enough not to be a humongous object of
     * the G1 collector (which would round each up to whole regions and hold twice what was sent).
     */
    private static final int HELD_CHUNK_BYTES = 256 << 10;
    /**
     * Pieces of a payload that a receive reduces: read from the socket and reduced at once, so that what the kernel
     * just wrote is read back from the core's cache, not from memory (a 1 MiB piece, with the accumulator and the
     * input streaming past, outgrows this machine's 1.25 MiB L2). 4 TCP ranks, 64 MiB ring reduce_scatter from
     * direct memory, five alternating pairs: 92-108 ms with 1 MiB pieces, 84-91 ms with 256 KiB
     * (docs/performance.md, session 20).
     */
    private static final int REDUCE_CHUNK_BYTES = 256 << 10;

    private final int rank;
    final int peer;
    final SocketChannel channel;
    private final ByteBuffer out = ByteBuffer.allocateDirect(CHUNK_BYTES + FrameDescriptor.HEADER_LENGTH)
            .order(ByteOrder.LITTLE_ENDIAN);
    private final long maxMessageBytes;
    private final Inbox inbox;
    private final ArrayPool pool;
    /** Whether the transport is closing: a broken connection is then no loss. */
    private final BooleanSupplier closing;
    /** The socket's stream, for {@link InputStream#available()} only: how many bytes a read takes at once. */
    private final InputStream waiting;
    private volatile boolean goodbye;
    /** Why the connection is unusable, once it is. */
    private volatile String lostReason;
    private Thread reader;

    TcpConnection(int rank, int peer, SocketChannel channel, long maxMessageBytes, Inbox inbox, ArrayPool pool,
                  BooleanSupplier closing) throws IOException {
        this.waiting = channel.socket().getInputStream();
        this.rank = rank;
        this.peer = peer;
        this.channel = channel;
        this.maxMessageBytes = maxMessageBytes;
        this.inbox = inbox;
        this.pool = pool;
        this.closing = closing;
    }

    /** Why the connection is unusable, or null. */
    String lostReason() {
        return lostReason;
    }

    /** Whether the peer said goodbye (closed its end cleanly). */
    boolean saidGoodbye() {
        return goodbye;
    }

    /** Starts the reader thread. */
    void startReader() {
        reader = new Thread(this::readLoop, "jccl-tcp-read-" + rank + "-from-" + peer);
        reader.setDaemon(true);
        reader.start();
    }

    /** Waits up to {@code millis} for the reader thread to end (after the peer's goodbye), if it was started. */
    void joinReader(long millis) throws InterruptedException {
        if (reader != null) {
            reader.join(millis);
        }
    }

    /**
     * Writes a frame: {@code header}, then the elements of {@code payload}. From memory already in the wire's byte
     * order the socket takes the payload as it is, with the header in one gathering write; otherwise the elements
     * are converted into the connection's buffer a chunk at a time. Waits for the connection's other writers as long
     * as they write.
     */
    void write(FrameHeader header, Buf payload) throws IOException {
        write(header, payload, false, 0);
    }

    /**
     * As {@link #write(FrameHeader, Buf)}; with {@code deadline}, gives up once the clock passes {@code deadlineNanos}
     * and returns false: while it waits for another writer, or, while it writes, when the peer has taken nothing for
     * {@link #STALL_NANOS} (it stopped reading: a frozen process, a hung host), by the transport's watchdog closing
     * the socket under it ({@link #expireLateWrite}): a frame cut short leaves the connection unusable. A write that
     * still moves goes on past its deadline. Throws {@code IOException} when the connection is lost otherwise.
     */
    boolean write(FrameHeader header, Buf payload, boolean deadline, long deadlineNanos) throws IOException {
        // an interrupted thread's write would close the socket (an interruptible channel closes when a thread blocked
        // in it is interrupted), and the peer would take this rank for dead: the interrupt waits for the caller
        boolean interrupted = Thread.interrupted();
        try {
            if (!deadline) {
                writeLock.lock();
            } else {
                int turn = awaitTurn(deadlineNanos);
                interrupted |= (turn & INTERRUPTED) != 0;
                if ((turn & TURN) == 0) {
                    return false; // another write holds the connection, stalled, past this one's deadline
                }
            }
            return writeHeld(header, payload, deadline, deadlineNanos);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static final int TURN = 1;
    private static final int INTERRUPTED = 2;

    /**
     * Waits for the connection's other writer, if any, while it moves, or until {@code deadlineNanos}: an abort or a
     * goodbye behind a long write that still moves goes out after it (given up, the peer would hear nothing), one
     * behind a write to a peer that stopped reading is given up. An interrupt does not end the wait. Returns
     * {@link #TURN} if it holds the lock now, with {@link #INTERRUPTED} if an interrupt came meanwhile.
     */
    private int awaitTurn(long deadlineNanos) {
        int interrupted = 0;
        while (true) {
            try {
                if (writeLock.tryLock(20, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                    return TURN | interrupted;
                }
            } catch (InterruptedException e) {
                interrupted = INTERRUPTED;
                continue;
            }
            long now = System.nanoTime();
            if (now - deadlineNanos >= 0 && now - progressNanos >= STALL_NANOS) {
                return interrupted;
            }
        }
    }

    /** The write, {@link #writeLock} held: released here. */
    private boolean writeHeld(FrameHeader header, Buf payload, boolean deadline, long deadlineNanos)
            throws IOException {
        long seq = ++writes;
        try {
            writeDeadline = deadlineNanos;
            hasWriteDeadline = deadline;
            progressNanos = System.nanoTime();
            writingStream = header.stream();
            writing.set(seq);
            try {
                writeFrame(header, payload);
            } catch (java.nio.channels.ClosedByInterruptException e) {
                if (expiredWrite == seq) { // the watchdog closed it first (JDK 25 then reports the interrupt)
                    return false;
                }
                // the JDK closed the socket because this thread was interrupted while it wrote: this rank's doing,
                // not the peer's (lostReason first: the reader, failing on the closed socket, says the same)
                lostReason = interruptedWhileSending();
                interruptedHere = true;
                throw e;
            } catch (IOException e) {
                if (expiredWrite == seq) {
                    return false;
                }
                throw e;
            }
            return true; // all of it written (the watchdog may close the connection right after: later writes fail)
        } finally {
            writing.compareAndSet(seq, 0);
            writeLock.unlock();
        }
    }

    /** How long a write past its deadline may go without the peer taking anything before the watchdog ends it. */
    static final long STALL_NANOS = 1_000_000_000L;

    /** Writers take turns; a writer with a deadline waits for its turn only until then. */
    private final java.util.concurrent.locks.ReentrantLock writeLock = new java.util.concurrent.locks.ReentrantLock();
    /** Writes so far (guarded by writeLock); the one in progress, or 0 (read by the watchdog); one it ended. */
    private long writes;
    private final java.util.concurrent.atomic.AtomicLong writing = new java.util.concurrent.atomic.AtomicLong();
    private volatile long expiredWrite;
    private volatile boolean hasWriteDeadline;
    private volatile long writeDeadline;
    /** When the write in progress last moved bytes to the socket. */
    private volatile long progressNanos;
    /** The stream of the write in progress (see {@link #writing}). */
    private volatile int writingStream;

    /**
     * After an abort of communicator {@code communicatorId} on this rank ({@code Communicator.abort}, or a failure on
     * another thread of its call): a write of that communicator's in progress, if any, counts as past its deadline, so
     * that the watchdog ends it once the peer has taken nothing for {@link #STALL_NANOS} ({@link #expireLateWrite}),
     * where it waited for its own deadline, the call's (30 minutes by default), blocked in the socket where no abort
     * is seen. A write that still moves goes on; one without a deadline (whose caller cannot be told it was cut)
     * is left alone.
     */
    void expireWriteOf(int communicatorId) {
        long seq = writing.get();
        if (seq > 0 && hasWriteDeadline && io.jccl.transport.Streams.communicatorOf(writingStream) == communicatorId) {
            abortedWrite = seq; // by number, never reused: a write that began meanwhile is not touched
        }
    }

    /** The write whose communicator was aborted ({@link #expireWriteOf}): past its deadline from then on. */
    private volatile long abortedWrite;

    /**
     * Why the socket closed under the reader when neither the watchdog nor this transport's close did it: a writer's
     * thread was interrupted (the JDK closes the socket from the interrupting thread, so the reader may fail before
     * the writer has said so: it waits up to a second for the writer's reason).
     */
    private String interruptedWriteReason() {
        long until = System.nanoTime() + 1_000_000_000L;
        String why = lostReason;
        while (why == null && System.nanoTime() - until < 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
            why = lostReason;
        }
        return why != null ? why : "rank " + rank + " closed its connection to rank " + peer + " under its reader, "
                + "rank " + peer + " not known to have failed (the JDK closes a socket under a write whose thread is "
                + "interrupted)";
    }

    /** Whether a write's thread was interrupted, which closed the socket: this rank's doing ({@link #lostReason}). */
    private volatile boolean interruptedHere;

    /** Whether the connection was closed by an interrupt of a writing thread of this rank, not by the peer. */
    boolean interruptedHere() {
        return interruptedHere;
    }

    /** Why the connection closed under a write whose thread was interrupted. */
    String interruptedWhileSending() {
        return "rank " + rank + " closed its connection to rank " + peer + ": a thread of rank " + rank + " was "
                + "interrupted while it sent to rank " + peer + ", and the JDK closes a socket under an interrupted "
                + "write (do not interrupt a thread in a collective over TCP; abort() ends a call)";
    }

    /**
     * The watchdog's look (every 100 ms): closes the socket under a write past its deadline that has moved nothing
     * for {@link #STALL_NANOS}, which then fails and returns false to its caller.
     */
    void expireLateWrite(long nowNanos) {
        long seq = writing.get();
        if (seq != 0 && hasWriteDeadline && (nowNanos - writeDeadline >= 0 || seq == abortedWrite)
                && nowNanos - progressNanos >= STALL_NANOS
                && writing.compareAndSet(seq, -seq)) { // the writer, done meanwhile, would have cleared it
            expiredWrite = seq;
            lostReason = "rank " + rank + " closed its connection to rank " + peer + ": a send to it did not "
                    + "complete by its deadline and rank " + peer + " took nothing for " + STALL_NANOS / 1_000_000
                    + " ms (it stopped reading: frozen, or its host hung)";
            TcpConnector.closeQuietly(channel);
        }
    }

    private void writeFrame(FrameHeader header, Buf payload) throws IOException {
        int n = header.payloadCount();
        out.clear();
        FrameDescriptor.encode(header, out);
        if (n > 0 && payload.isWireOrderMemory()) {
            out.flip();
            ByteBuffer data = payload.bytes();
            int end = data.limit();
            ByteBuffer[] frame = {out, data};
            do { // in pieces of CHUNK_BYTES, so that the watchdog sees the write move
                data.limit(Math.min(end, data.position() + CHUNK_BYTES));
                while (out.hasRemaining() || data.hasRemaining()) {
                    channel.write(frame);
                }
                progressNanos = System.nanoTime();
            } while (data.limit() < end);
            return;
        }
        int perChunk = CHUNK_BYTES / payload.dtype().sizeBytes();
        int done = 0;
        do {
            int m = Math.min(perChunk, n - done);
            if (m > 0) {
                payload.slice(done, m).writeTo(out);
                done += m;
            }
            out.flip();
            while (out.hasRemaining()) {
                channel.write(out);
            }
            out.clear();
            progressNanos = System.nanoTime();
        } while (done < n);
    }

    /** Says goodbye ({@code bye}, a goodbye header) and shuts the sending side down; nothing follows. */
    void sayGoodbye(FrameHeader bye) throws IOException {
        // at most 2 s (and a stalled peer's 1 s): a peer that stopped reading must not hold close() forever
        if (write(bye, new Buf(DataType.UINT8, new byte[0], 0, 0), true, System.nanoTime() + 2_000_000_000L)) {
            channel.shutdownOutput();
        }
    }

    /** Closes the socket; the reader thread, if any, ends. */
    void close() {
        TcpConnector.closeQuietly(channel);
    }

    private void readLoop() {
        ByteBuffer in = ByteBuffer.allocateDirect(CHUNK_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        try {
            while (true) {
                in.clear().limit(FrameDescriptor.HEADER_LENGTH);
                readFully(in);
                in.flip();
                FrameHeader h = FrameDescriptor.decode(in);
                if (h.type() == FrameDescriptor.TYPE_GOODBYE) {
                    goodbye = true;
                    inbox.peerClosed(peer, Frame.departed(peer));
                    return;
                }
                DataType dt = checkHeader(h);
                PostedReceive posted = h.isAbort() ? null : inbox.claim(peer, h);
                if (posted != null) {
                    readInto(posted, h, dt, in);
                    inbox.filled(peer, h, posted);
                } else {
                    inbox.deliver(peer, new Frame(h, readPayload(h, dt, in)));
                }
            }
        } catch (FrameFormatException e) {
            protocolError(e.getMessage());
        } catch (EOFException e) {
            if (!closing.getAsBoolean() && !goodbye) {
                lose("connection to rank " + peer
                        + " lost (end of stream without goodbye): the process died or was killed");
            }
        } catch (java.nio.channels.ClosedChannelException e) {
            // closed on this side (the watchdog, a write's interrupted thread): the writer says why, or soon will
            if (!closing.getAsBoolean() && !goodbye) {
                if (expiredWrite != 0) { // the watchdog: the peer stopped reading, so it is the one named
                    lose(lostReason);
                } else { // an interrupted write: this rank's doing, so its frame names this rank as the origin
                    String why = interruptedWriteReason();
                    if (!closing.getAsBoolean()) { // closed meanwhile: nobody waits any more
                        lostReason = why;
                        inbox.peerLost(Frame.peerGone(rank, why));
                    }
                }
            }
        } catch (IOException e) {
            if (!closing.getAsBoolean() && !goodbye) {
                lose(expiredWrite != 0 ? lostReason : "connection to rank " + peer + " lost (" + e.getMessage()
                        + "): the process died or was killed, or the network failed");
            }
        } catch (RuntimeException | Error e) {
            // a defect, or no memory for a frame that came before its receive: never leave a receive from this peer
            // waiting for its deadline (and the peer's writes stalled, blaming this rank for not reading); the
            // receives fail first, then the log, which may fail again for want of memory
            TcpConnector.closeQuietly(channel);
            lose("the reader of the connection from rank " + peer + " failed: " + e);
            try {
                LOG.error("rank {}: the reader of the connection from rank {} failed", rank, peer, e);
            } catch (RuntimeException | Error ignored) {
                // the receives know why
            }
        }
    }

    private void lose(String reason) {
        lostReason = reason;
        inbox.peerLost(Frame.peerGone(peer, reason));
    }

    /** The frame's dtype, after checking what a header alone can prove wrong (its dtype, source and length). */
    private DataType checkHeader(FrameHeader h) throws FrameFormatException {
        DataType dt;
        try {
            dt = DataType.fromId(h.dtype());
        } catch (IllegalArgumentException e) {
            throw new FrameFormatException("unknown dtype id " + h.dtype() + " from rank " + peer);
        }
        if (h.source() != peer && !h.isAbort()) { // an abort may relay another rank's failure
            throw new FrameFormatException("frame claims source rank " + h.source() + " on the connection of rank "
                    + peer);
        }
        long bytes = (long) h.payloadCount() * dt.sizeBytes();
        if (bytes > maxMessageBytes) {
            throw new FrameFormatException("impossible payload length: payloadBytes=" + bytes + ", max="
                    + maxMessageBytes);
        }
        return dt;
    }

    /**
     * Reads the payload of {@code h} into {@code posted}'s destination: the claimed receive accepted this header, so
     * the payload has exactly its destination's length. Into little-endian memory with no operator
     * ({@link PostedReceive#fillable}) the bytes the kernel holds go straight into the destination, and when it holds
     * none the reader waits in a read into {@code in} and copies what came; otherwise chunk by chunk into the socket
     * buffer {@code in} and from there into the destination (converted, or reduced). If the receive is cancelled
     * meanwhile, the rest is read and dropped.
     */
    private void readInto(PostedReceive posted, FrameHeader h, DataType dt, ByteBuffer in) throws IOException {
        int n = h.payloadCount();
        if (posted.fillable()) {
            ByteBuffer window = posted.destination().bytes();
            for (int left = window.remaining(); left > 0; ) {
                int ready = Math.min(Math.min(waiting.available(), left), CHUNK_BYTES);
                boolean kept;
                if (ready > 0) { // a read of bytes already there: it does not block under the receive's lock
                    window.limit(window.position() + ready);
                    int r = posted.fill(channel, window);
                    kept = r != PostedReceive.GIVEN_UP;
                    if (r < 0 && kept) {
                        throw new EOFException();
                    }
                    left -= kept ? r : 0;
                } else {
                    in.clear().limit(Math.min(left, in.capacity()));
                    if (channel.read(in) < 0) {
                        throw new EOFException();
                    }
                    in.flip();
                    left -= in.remaining();
                    window.limit(window.position() + in.remaining());
                    kept = posted.fill(in, window);
                }
                if (!kept) {
                    drain(in, left);
                    return;
                }
            }
            return;
        }
        int perChunk = (posted.op() != null ? REDUCE_CHUNK_BYTES : CHUNK_BYTES) / dt.sizeBytes();
        boolean halves = dt == DataType.FLOAT16 || dt == DataType.BFLOAT16; // reduced through an array (place)
        Object scratch = posted.op() == null || !halves ? null : pool.take(dt, Math.min(n, perChunk));
        try {
            for (int done = 0; done < n; ) {
                int m = Math.min(perChunk, n - done);
                in.clear().limit(m * dt.sizeBytes());
                readFully(in);
                in.flip();
                posted.place(in, done, m, scratch);
                done += m;
            }
        } finally {
            if (scratch != null) {
                pool.give(dt, scratch);
            }
        }
    }

    /** Reads and drops {@code bytes} bytes of a payload whose receive was given up. */
    private void drain(ByteBuffer in, int bytes) throws IOException {
        for (int left = bytes; left > 0; ) {
            int m = Math.min(left, in.capacity());
            in.clear().limit(m);
            readFully(in);
            left -= m;
        }
    }

    private Object readPayload(FrameHeader h, DataType dt, ByteBuffer in) throws IOException {
        int n = h.payloadCount();
        int perChunk = CHUNK_BYTES / dt.sizeBytes();
        if (n <= perChunk) {
            Object arr = pool.take(dt, n);
            readChunk(in, dt, arr, 0, n);
            return arr;
        }
        // larger: whole chunks as they arrive, so a length that lies costs at most what was sent (plus one chunk);
        // the frame's own array is made once its last byte is in
        List<Object> chunks = new ArrayList<>();
        int perHeld = HELD_CHUNK_BYTES / dt.sizeBytes();
        for (int done = 0; done < n; done += perHeld) {
            int m = Math.min(perHeld, n - done);
            Object chunk = dt.newArray(m);
            readChunk(in, dt, chunk, 0, m);
            chunks.add(chunk);
        }
        Object arr = pool.take(dt, n);
        int at = 0;
        for (Object chunk : chunks) {
            int m = java.lang.reflect.Array.getLength(chunk);
            System.arraycopy(chunk, 0, arr, at, m);
            at += m;
        }
        return arr;
    }

    private void readChunk(ByteBuffer in, DataType dt, Object arr, int at, int m) throws IOException {
        in.clear().limit(m * dt.sizeBytes());
        readFully(in);
        in.flip();
        new Buf(dt, arr, at, m).readFrom(in);
    }

    private void readFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (channel.read(b) < 0) {
                throw new EOFException();
            }
        }
    }

    private void protocolError(String message) {
        LOG.error("rank {}: protocol error on the connection from rank {}: {}; closing it", rank, peer, message);
        lostReason = "protocol error on the connection from rank " + peer + ": " + message;
        TcpConnector.closeQuietly(channel);
        if (!closing.getAsBoolean()) {
            inbox.peerLost(Frame.peerGone(peer, lostReason));
        }
    }
}
