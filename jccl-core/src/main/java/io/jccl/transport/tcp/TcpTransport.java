package io.jccl.transport.tcp;

import io.jccl.DataType;
import io.jccl.security.Handshake;
import io.jccl.store.Store;
import io.jccl.transport.AbstractTransport;
import io.jccl.transport.ArrayPool;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Inbox;
import io.jccl.transport.PeerLostException;
import io.jccl.transport.PostedReceive;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.channels.SocketChannel;

/**
 * Real sockets between ranks (processes or hosts): one TCP connection per pair of ranks, TCP_NODELAY, frames as
 * laid out by {@link FrameDescriptor} followed by the payload in little-endian order.
 *
 * <p>Set-up ({@code TcpConnector}): each rank listens, publishes {@code host:port} in the store, connects to every
 * lower rank (retrying with backoff until the connect timeout) and accepts every higher one; both ends of each
 * connection prove the job secret ({@link Handshake}). A connection that fails the handshake is logged and closed;
 * the job goes on.
 *
 * <p>Data path ({@code TcpConnection}): each connection has a reader thread that fills the receives posted for its
 * frames (straight from the socket into direct memory, else through its socket buffer) or moves whole frames into
 * this rank's {@link Inbox}, so sends never wait for the peer's algorithm and a ring cannot deadlock on full socket
 * buffers. A frame with a wrong magic, version or an impossible length closes the connection with a clear error
 * and allocates nothing of the claimed size (payloads above 1 MiB are held in pieces until their last byte).
 * End of stream without a goodbye frame means the peer died: every communicator over this transport is aborted
 * with a message naming it. Once this rank's own {@link #close()} has begun, a later send or receive, and a send in
 * flight whose socket it shuts, fail with "rank N: the TCP transport is closed", as over the shared-memory transport:
 * no peer is blamed for this rank's close.
 */
public final class TcpTransport extends AbstractTransport {
    private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);

    private final TcpConnector connector;
    /** By peer: its connection (null at this rank). */
    private final TcpConnection[] peers;
    /** The layout the co-location proof gave ({@link #placeOnHosts}); null where none was made. */
    private volatile int[] hostOf;

    private TcpTransport(int rank, int size, TcpOptions options, TcpConnector connector) {
        super("tcp", rank, size, new Inbox(size), new ArrayPool());
        this.connector = connector;
        this.peers = new TcpConnection[size];
        SocketChannel[] channels = connector.channels();
        for (int p = 0; p < size; p++) {
            if (channels[p] != null) {
                try {
                    peers[p] = new TcpConnection(rank, p, channels[p], options.maxMessageBytes(), inbox, pool,
                            () -> closing);
                } catch (IOException e) {
                    for (SocketChannel ch : channels) { // every connection's socket; no reader has started yet
                        TcpConnector.closeQuietly(ch);
                    }
                    connector.close();
                    throw new io.jccl.JcclException("rank " + rank + ": could not set up the connection to rank " + p
                            + ": " + e.getMessage(), e);
                }
            }
        }
        connector.every(100, () -> { // writes past their deadline (see send)
            long now = System.nanoTime();
            for (TcpConnection c : peers) {
                if (c != null) {
                    c.expireLateWrite(now);
                }
            }
        });
    }

    /**
     * Connects rank {@code rank} of {@code size} to every other rank, meeting them through {@code store}.
     *
     * @throws io.jccl.JcclException naming the ranks that did not connect within the connect timeout
     */
    public static TcpTransport connect(int rank, int size, Store store, TcpOptions options) {
        TcpConnector connector = TcpConnector.listen(rank, size, options);
        try {
            connector.establish(store);
        } catch (RuntimeException e) {
            connector.stopListening();
            new TcpTransport(rank, size, options, connector).close(); // goodbye to the peers connected so far
            throw e;
        }
        TcpTransport t = new TcpTransport(rank, size, options, connector);
        for (TcpConnection c : t.peers) {
            if (c != null) {
                c.startReader();
            }
        }
        return t;
    }

    /**
     * Records the layout a co-location proof gave, where no two ranks share memory: every rank its own host
     * ({@code hostOf[r] == r}), so that AUTO prices every message with the figures between hosts
     * ({@code inter_host}) rather than one host's {@code tcp} ones. Set before the transport is used (a
     * communicator reads it once, when made); without it the layout is unknown ({@link #hostOf} null).
     *
     * @throws IllegalArgumentException unless {@code hostOf} puts every rank of this transport on a host of its own
     */
    public void placeOnHosts(int[] hostOf) {
        boolean own = hostOf.length == size();
        for (int r = 0; own && r < hostOf.length; r++) {
            own = hostOf[r] == r;
        }
        if (!own) {
            throw new IllegalArgumentException("rank " + rank() + ": a TCP transport's layout puts every rank of "
                    + size() + " on a host of its own, not " + java.util.Arrays.toString(hostOf));
        }
        this.hostOf = hostOf.clone();
    }

    /** Every rank its own host where {@link #placeOnHosts} said so; else null (unknown: no proof was made). */
    @Override
    public int[] hostOf() {
        int[] h = hostOf;
        return h == null ? null : h.clone();
    }

    @Override
    public void send(int dst, FrameHeader header, io.jccl.buffer.Buf payload) {
        send(dst, header, payload, false, 0);
    }

    /**
     * A write to a peer that stopped reading (frozen, its host hung) blocks once the socket's buffers are full: past
     * {@code deadlineNanos}, once the peer has taken nothing for a second, the watchdog closes the connection under
     * it, and this returns false (as it does when another write holds the connection past the deadline), so that the
     * call times out naming the peer instead of waiting forever.
     */
    @Override
    public boolean send(int dst, FrameHeader header, io.jccl.buffer.Buf payload, long deadlineNanos) {
        return send(dst, header, payload, true, deadlineNanos);
    }

    private boolean send(int dst, FrameHeader header, io.jccl.buffer.Buf payload, boolean deadline,
                         long deadlineNanos) {
        ensureOpen();
        TcpConnection c = peers[dst];
        try {
            return c.write(header, payload, deadline, deadlineNanos);
        } catch (java.nio.channels.ClosedByInterruptException e) {
            // this rank's thread was interrupted in the write, and the JDK closed the socket: this rank's fault, not
            // the peer's (it was named as lost, and the job blamed a live peer)
            throw new io.jccl.JcclException(c.interruptedWhileSending(), e);
        } catch (IOException e) {
            if (closing) { // this rank's own close() shut the socket under the write: no loss of the peer's
                throw closedException();
            }
            if (c.interruptedHere()) { // another thread's write was interrupted and closed the socket: this rank's
                throw new io.jccl.JcclException(c.lostReason(), e);
            }
            String why = c.lostReason();
            if (why == null && c.saidGoodbye()) {
                why = "rank " + dst + " closed its communicator while rank " + rank() + " was sending to it";
            }
            throw new PeerLostException(dst, why != null ? why : "connection to rank " + dst + " lost while sending ("
                    + e.getMessage() + "): the process died or was killed, or the network failed", e);
        }
    }

    /**
     * As every transport does ({@link io.jccl.transport.AbstractTransport#interrupt}), and a write of the aborted
     * communicator's still in progress is given a deadline of now ({@link TcpConnection#expireWriteOf}): blocked in
     * the socket, it sees no abort, and would wait for its peer to read until the call's own deadline.
     */
    @Override
    public void interrupt(Frame abort) {
        super.interrupt(abort);
        int communicator = io.jccl.transport.Streams.communicatorOf(abort.header().stream());
        for (TcpConnection c : peers) {
            if (c != null) {
                c.expireWriteOf(communicator);
            }
        }
    }

    @Override
    protected io.jccl.JcclException closedException() {
        return new io.jccl.JcclException("rank " + rank + ": the TCP transport is closed", null);
    }

    /**
     * Receives are posted to the inbox, where the connection's reader finds them and fills them from its buffer. On a
     * closed transport nothing is posted (the receive then fails saying so).
     */
    @Override
    public void post(int src, int stream, PostedReceive posted) {
        if (!closing) {
            inbox.post(src, stream, posted);
        }
    }

    @Override
    public Frame receive(int src, int stream, long deadlineNanos, PostedReceive posted) throws InterruptedException {
        if (closing) {
            Frame f = inbox.receive(src, stream, System.nanoTime(), posted); // what it ended with already, if any
            if (f != null) {
                return f;
            }
            throw closedException();
        }
        return inbox.receive(src, stream, deadlineNanos, posted);
    }

    @Override
    protected void sendAbort(int peer, Frame abort) {
        TcpConnection c = peers[peer];
        if (c == null) {
            return;
        }
        try { // best effort, never long: a connection another write holds to a peer that stopped reading is skipped
            if (!c.write(abort.header(), new io.jccl.buffer.Buf(DataType.UINT8, abort.payload(), 0,
                    abort.header().payloadCount()), true, System.nanoTime() + 1_000_000_000L)) {
                LOG.debug("rank {}: could not tell rank {} of the abort within 1 s", rank, peer);
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("rank {}: could not tell rank {} of the abort: {}", rank, peer, e.toString());
        }
    }

    @Override
    public void close() {
        if (closing) {
            return;
        }
        closing = true;
        FrameHeader bye = Frame.goodbye(rank);
        for (TcpConnection c : peers) {
            if (c != null) {
                try {
                    c.sayGoodbye(bye);
                } catch (IOException | RuntimeException ignored) {
                    // the peer may be gone already
                }
            }
        }
        connector.stopListening();
        long waitUntil = System.nanoTime() + 500_000_000L; // let peers' goodbyes arrive, briefly
        for (TcpConnection c : peers) {
            if (c != null) {
                try {
                    c.joinReader(Math.max(1, (waitUntil - System.nanoTime()) / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        for (TcpConnection c : peers) {
            if (c != null) {
                c.close();
            }
        }
        connector.close();
    }
}
