package io.jccl.transport.tcp;

import io.jccl.DataType;
import io.jccl.buffer.Buf;
import io.jccl.store.Store;
import io.jccl.security.Handshake;
import io.jccl.security.HandshakeDescriptor;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameFormatException;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Inbox;
import io.jccl.transport.PeerLostException;
import io.jccl.transport.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Real sockets between ranks (processes or hosts): one TCP connection per pair of ranks, TCP_NODELAY, frames as
 * laid out by {@link FrameDescriptor} followed by the payload in little-endian order.
 *
 * <p>Set-up: each rank listens, publishes {@code host:port} in the store, connects to every lower rank (retrying
 * with backoff until the connect timeout) and accepts every higher one; both ends of each connection prove the
 * job secret ({@link Handshake}). A connection that fails the handshake is logged and closed; the job goes on.
 *
 * <p>Each connection has a reader thread that moves whole frames into this rank's {@link Inbox}, so sends never
 * wait for the peer's algorithm and a ring cannot deadlock on full socket buffers. A frame with a wrong magic,
 * version or an impossible length closes the connection with a clear error and allocates nothing of the claimed
 * size (payloads above 64 MiB grow as their bytes arrive). End of stream without a goodbye frame means the peer
 * died: every communicator over this transport is aborted with a message naming it.
 */
public final class TcpTransport implements Transport {
    private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);
    private static final int CHUNK_BYTES = 1 << 20;
    /**
     * Pieces of a large incoming frame held until its last byte: small enough not to be a humongous object of
     * the G1 collector (which would round each up to whole regions and hold twice what was sent).
     */
    private static final int HELD_CHUNK_BYTES = 256 << 10;
    private static final int HANDSHAKE_TIMEOUT_MS = 10_000;

    private final int rank;
    private final int size;
    private final TcpOptions options;
    private final ServerSocketChannel server;
    private final Inbox inbox;
    private final io.jccl.transport.ArrayPool pool = new io.jccl.transport.ArrayPool();
    private final Connection[] peers;
    private final ScheduledExecutorService watchdog;
    private final Thread acceptor;
    private volatile boolean closing;

    private final class Connection {
        final int peer;
        final SocketChannel channel;
        final ByteBuffer out = ByteBuffer.allocateDirect(CHUNK_BYTES + FrameDescriptor.HEADER_LENGTH)
                .order(ByteOrder.LITTLE_ENDIAN);
        volatile boolean goodbye;
        /** Why the connection is unusable, once it is. */
        volatile String lostReason;
        Thread reader;

        Connection(int peer, SocketChannel channel) {
            this.peer = peer;
            this.channel = channel;
        }
    }

    private TcpTransport(int rank, int size, TcpOptions options, ServerSocketChannel server) {
        this.rank = rank;
        this.size = size;
        this.options = options;
        this.server = server;
        this.inbox = new Inbox(size);
        this.peers = new Connection[size];
        this.watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "jccl-tcp-watchdog-" + rank);
            t.setDaemon(true);
            return t;
        });
        this.acceptor = new Thread(this::acceptLoop, "jccl-tcp-accept-" + rank);
        this.acceptor.setDaemon(true);
    }

    /**
     * Connects rank {@code rank} of {@code size} to every other rank, meeting them through {@code store}.
     *
     * @throws io.jccl.JcclException naming the ranks that did not connect within the connect timeout
     */
    public static TcpTransport connect(int rank, int size, Store store, TcpOptions options) {
        ServerSocketChannel server;
        try {
            server = ServerSocketChannel.open();
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(new InetSocketAddress(options.bindHost(), 0), Math.max(16, size * 2));
        } catch (IOException e) {
            throw new io.jccl.JcclException("rank " + rank + ": cannot listen on " + options.bindHost() + ": "
                    + e.getMessage(), e);
        }
        TcpTransport t = new TcpTransport(rank, size, options, server);
        try {
            t.establish(store);
            return t;
        } catch (RuntimeException e) {
            t.close();
            throw e;
        }
    }

    private String advertisedAddress() throws IOException {
        String host = options.advertiseHost();
        if (host == null) {
            host = options.bindHost().equals("0.0.0.0") ? InetAddress.getLocalHost().getHostAddress()
                    : options.bindHost();
        }
        return host + ":" + ((InetSocketAddress) server.getLocalAddress()).getPort();
    }

    private void establish(Store store) {
        long deadline = System.nanoTime() + options.connectTimeout().toNanos();
        try {
            store.setString("tcp/addr/" + rank, advertisedAddress());
        } catch (IOException e) {
            throw new io.jccl.JcclException("rank " + rank + ": cannot determine the address to advertise", e);
        }
        acceptor.start();
        for (int peer = 0; peer < rank; peer++) {
            Duration left = Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
            String addr = store.getString("tcp/addr/" + peer, left);
            register(connectTo(peer, addr, deadline));
        }
        synchronized (peers) {
            while (true) {
                List<Integer> missing = new ArrayList<>();
                for (int p = rank + 1; p < size; p++) {
                    if (peers[p] == null) {
                        missing.add(p);
                    }
                }
                if (missing.isEmpty()) {
                    break;
                }
                long leftMs = (deadline - System.nanoTime()) / 1_000_000;
                if (leftMs <= 0) {
                    throw new io.jccl.JcclException("rank " + rank + ": ranks " + missing + " did not connect within "
                            + options.connectTimeout().toMillis() + " ms", null);
                }
                try {
                    peers.wait(leftMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new io.jccl.JcclException("rank " + rank + ": interrupted while connecting", e);
                }
            }
        }
        for (Connection c : peers) {
            if (c != null) {
                c.reader = new Thread(() -> readLoop(c), "jccl-tcp-read-" + rank + "-from-" + c.peer);
                c.reader.setDaemon(true);
                c.reader.start();
            }
        }
    }

    private Connection connectTo(int peer, String addr, long deadline) {
        int colon = addr.lastIndexOf(':');
        InetSocketAddress target = new InetSocketAddress(addr.substring(0, colon),
                Integer.parseInt(addr.substring(colon + 1)));
        long backoffMs = 5;
        IOException last = null;
        while (System.nanoTime() - deadline < 0) {
            SocketChannel ch = null;
            try {
                ch = SocketChannel.open();
                int leftMs = (int) Math.max(1, Math.min(5_000, (deadline - System.nanoTime()) / 1_000_000));
                ch.socket().connect(target, leftMs);
                configure(ch);
                guardedHandshake(ch, true, peer);
                return new Connection(peer, ch);
            } catch (Handshake.RefusedException e) {
                closeQuietly(ch);
                throw new io.jccl.JcclException("rank " + rank + ": rank " + peer + " at " + addr
                        + " refused the connection: " + e.getMessage(), e);
            } catch (IOException e) {
                closeQuietly(ch);
                last = e;
                sleep(backoffMs);
                backoffMs = Math.min(backoffMs * 2, 500);
            }
        }
        throw new io.jccl.JcclException("rank " + rank + ": could not connect to rank " + peer + " at " + addr
                + " within " + options.connectTimeout().toMillis() + " ms: " + (last == null ? "" : last.getMessage()),
                last);
    }

    private static void configure(SocketChannel ch) throws IOException {
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
        ch.configureBlocking(true);
    }

    /** Runs the handshake, closing the channel if it takes longer than the handshake timeout. */
    private int guardedHandshake(SocketChannel ch, boolean asClient, int expectedPeer) throws IOException {
        ScheduledFuture<?> guard = watchdog.schedule(() -> closeQuietly(ch), HANDSHAKE_TIMEOUT_MS,
                TimeUnit.MILLISECONDS);
        try {
            InputStream in = Channels.newInputStream(ch);
            OutputStream out = Channels.newOutputStream(ch);
            if (asClient) {
                int server = Handshake.client(in, out, options.secret(), HandshakeDescriptor.PURPOSE_TRANSPORT, rank,
                        size);
                if (server != expectedPeer) {
                    throw new Handshake.RefusedException("expected rank " + expectedPeer + ", reached rank " + server);
                }
                return server;
            }
            Handshake.Client c = Handshake.server(in, out, options.secret(), HandshakeDescriptor.PURPOSE_TRANSPORT,
                    rank);
            if (c.worldSize != size) {
                throw new Handshake.RefusedException("client of a world of " + c.worldSize + " ranks, this is "
                        + size);
            }
            return c.rank;
        } finally {
            guard.cancel(false);
        }
    }

    private void acceptLoop() {
        while (!closing) {
            SocketChannel ch;
            try {
                ch = server.accept();
            } catch (IOException e) {
                if (!closing) {
                    LOG.warn("rank {}: accept failed: {}", rank, e.toString());
                }
                return;
            }
            Thread t = new Thread(() -> admit(ch), "jccl-tcp-admit-" + rank);
            t.setDaemon(true);
            t.start();
        }
    }

    private void admit(SocketChannel ch) {
        String from = remote(ch); // before the handshake: a peer that vanishes has no address afterwards
        try {
            configure(ch);
            int peer = guardedHandshake(ch, false, -1);
            synchronized (peers) {
                if (peer <= rank || peer >= size || peers[peer] != null || closing) {
                    throw new Handshake.RefusedException("unexpected connection claiming rank " + peer);
                }
                peers[peer] = new Connection(peer, ch);
                peers.notifyAll();
            }
        } catch (IOException e) {
            LOG.warn("rank {}: refused a connection from {}: {}", rank, from, io.jccl.security.Handshake.why(e));
            closeQuietly(ch);
        }
    }

    private void register(Connection c) {
        synchronized (peers) {
            peers[c.peer] = c;
            peers.notifyAll();
        }
    }

    private static String remote(SocketChannel ch) {
        try {
            return String.valueOf(ch.getRemoteAddress());
        } catch (IOException e) {
            return "an address that is already gone";
        }
    }

    // ------------------------------------------------------------------ data path

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public String name() {
        return "tcp";
    }

    @Override
    public void send(int dst, FrameHeader header, DataType dtype, Object payload, int offset) {
        Connection c = peers[dst];
        try {
            write(c, header, dtype, payload, offset);
        } catch (IOException e) {
            String why = c.lostReason;
            throw new PeerLostException(dst, why != null ? why : "connection to rank " + dst + " lost while sending ("
                    + e.getMessage() + "): the process died or was killed, or the network failed", e);
        }
    }

    private void write(Connection c, FrameHeader header, DataType dtype, Object payload, int offset)
            throws IOException {
        int n = header.payloadCount();
        int elem = dtype.sizeBytes();
        int perChunk = CHUNK_BYTES / elem;
        synchronized (c) {
            ByteBuffer out = c.out;
            out.clear();
            FrameDescriptor.encode(header, out);
            int done = 0;
            do {
                int m = Math.min(perChunk, n - done);
                if (m > 0) {
                    new Buf(dtype, payload, offset + done, m).writeTo(out);
                    done += m;
                }
                out.flip();
                while (out.hasRemaining()) {
                    c.channel.write(out);
                }
                out.clear();
            } while (done < n);
        }
    }

    private void readLoop(Connection c) {
        ByteBuffer in = ByteBuffer.allocateDirect(CHUNK_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        try {
            while (true) {
                in.clear().limit(FrameDescriptor.HEADER_LENGTH);
                readFully(c.channel, in);
                in.flip();
                FrameHeader h = FrameDescriptor.decode(in);
                if (h.type() == FrameDescriptor.TYPE_GOODBYE) {
                    c.goodbye = true;
                    inbox.peerClosed(c.peer, Frame.departed(c.peer));
                    return;
                }
                inbox.deliver(c.peer, new Frame(h, readPayload(c, h, in)));
            }
        } catch (FrameFormatException e) {
            protocolError(c, e.getMessage());
        } catch (EOFException e) {
            if (!closing && !c.goodbye) {
                lose(c, "connection to rank " + c.peer
                        + " lost (end of stream without goodbye): the process died or was killed");
            }
        } catch (IOException e) {
            if (!closing && !c.goodbye) {
                lose(c, "connection to rank " + c.peer + " lost (" + e.getMessage()
                        + "): the process died or was killed, or the network failed");
            }
        }
    }

    private void lose(Connection c, String reason) {
        c.lostReason = reason;
        inbox.peerLost(Frame.peerGone(c.peer, reason));
    }

    private Object readPayload(Connection c, FrameHeader h, ByteBuffer in) throws IOException {
        DataType dt;
        try {
            dt = DataType.fromId(h.dtype());
        } catch (IllegalArgumentException e) {
            throw new FrameFormatException("unknown dtype id " + h.dtype() + " from rank " + c.peer);
        }
        if (h.source() != c.peer && !h.isAbort()) { // an abort may relay another rank's failure
            throw new FrameFormatException("frame claims source rank " + h.source() + " on the connection of rank "
                    + c.peer);
        }
        long bytes = (long) h.payloadCount() * dt.sizeBytes();
        if (bytes > options.maxMessageBytes()) {
            throw new FrameFormatException("impossible payload length: payloadBytes=" + bytes + ", max="
                    + options.maxMessageBytes());
        }
        int n = h.payloadCount();
        int perChunk = CHUNK_BYTES / dt.sizeBytes();
        if (n <= perChunk) {
            Object arr = pool.take(dt, n);
            readChunk(c, in, dt, arr, 0, n);
            return arr;
        }
        // larger: whole chunks as they arrive, so a length that lies costs at most what was sent (plus one chunk);
        // the frame's own array is made once its last byte is in
        java.util.List<Object> chunks = new java.util.ArrayList<>();
        int perHeld = HELD_CHUNK_BYTES / dt.sizeBytes();
        for (int done = 0; done < n; done += perHeld) {
            int m = Math.min(perHeld, n - done);
            Object chunk = dt.newArray(m);
            readChunk(c, in, dt, chunk, 0, m);
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

    private void readChunk(Connection c, ByteBuffer in, DataType dt, Object arr, int at, int m) throws IOException {
        in.clear().limit(m * dt.sizeBytes());
        readFully(c.channel, in);
        in.flip();
        new Buf(dt, arr, at, m).readFrom(in);
    }

    private static void readFully(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new EOFException();
            }
        }
    }

    private void protocolError(Connection c, String message) {
        LOG.error("rank {}: protocol error on the connection from rank {}: {}; closing it", rank, c.peer, message);
        c.lostReason = "protocol error on the connection from rank " + c.peer + ": " + message;
        closeQuietly(c.channel);
        if (!closing) {
            inbox.peerLost(Frame.peerGone(c.peer, c.lostReason));
        }
    }

    @Override
    public Frame receive(int src, int stream, long deadlineNanos) throws InterruptedException {
        return inbox.receive(src, stream, deadlineNanos);
    }

    @Override
    public FrameHeader peekHeader(int src, int stream) {
        return inbox.peekHeader(src, stream);
    }

    @Override
    public Frame pendingAbort(int src, int stream) {
        return inbox.pendingAbort(src, stream);
    }

    @Override
    public void release(Frame frame) {
        pool.giveBack(frame);
    }

    @Override
    public void abortPeers(int[] targets, FrameHeader header, String reason) {
        byte[] bytes = reason.getBytes(StandardCharsets.UTF_8);
        FrameHeader h = header.withStep(header.step(), bytes.length);
        for (int peer : targets) {
            Connection c = peer == rank ? null : peers[peer];
            if (c == null) {
                continue;
            }
            try {
                write(c, h, DataType.UINT8, bytes, 0);
            } catch (IOException | RuntimeException e) {
                LOG.debug("rank {}: could not tell rank {} of the abort: {}", rank, peer, e.toString());
            }
        }
    }

    @Override
    public void interrupt(Frame abort) {
        inbox.deliver(rank, abort);
    }

    @Override
    public void close() {
        if (closing) {
            return;
        }
        closing = true;
        FrameHeader bye = Frame.goodbye(rank);
        for (Connection c : peers) {
            if (c != null) {
                try {
                    write(c, bye, DataType.UINT8, new byte[0], 0);
                    c.channel.shutdownOutput();
                } catch (IOException | RuntimeException ignored) {
                    // the peer may be gone already
                }
            }
        }
        closeQuietly(server);
        long waitUntil = System.nanoTime() + 500_000_000L; // let peers' goodbyes arrive, briefly
        for (Connection c : peers) {
            if (c != null && c.reader != null) {
                try {
                    c.reader.join(Math.max(1, (waitUntil - System.nanoTime()) / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        for (Connection c : peers) {
            if (c != null) {
                closeQuietly(c.channel);
            }
        }
        watchdog.shutdownNow();
    }

    private static void closeQuietly(java.io.Closeable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (IOException ignored) {
            // best effort
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new io.jccl.JcclException("interrupted while connecting", e);
        }
    }
}
