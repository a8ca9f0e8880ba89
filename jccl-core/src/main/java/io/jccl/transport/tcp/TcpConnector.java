package io.jccl.transport.tcp;

import io.jccl.JcclException;
import io.jccl.security.Handshake;
import io.jccl.security.HandshakeDescriptor;
import io.jccl.store.Store;
import io.jccl.transport.SetUpTimeouts;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * How a rank of the TCP transport meets its peers: it listens, publishes {@code host:port} in the store, dials
 * every lower rank (retrying with backoff until the connect timeout) and admits every higher one; both ends of each
 * connection prove the job secret ({@link Handshake}) within a handshake timeout. A connection that fails the
 * handshake, claims a rank it cannot have or comes once the rank's peers are all connected is logged and closed;
 * the job goes on. The listener keeps refusing such connections until {@link #stopListening}. While it waits for its
 * peers it reads the store every {@link #LOOK_MILLIS} ms at most, whose read fails once a rank's set-up has failed
 * (the rendezvous's store): the wait ends with that rank's reason ({@link #lookForFailure}).
 */
final class TcpConnector implements Closeable {
    /** The transport's logger: what the connector logs is the transport's. */
    private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);
    private static final int HANDSHAKE_TIMEOUT_MS = 10_000;

    private final int rank;
    private final int size;
    private final TcpOptions options;
    private final ServerSocketChannel server;
    /** By peer: its connection, once dialled or admitted; guarded by itself. */
    private final SocketChannel[] channels;
    private final ScheduledExecutorService watchdog;
    private final Thread acceptor;
    private volatile boolean closing;

    private TcpConnector(int rank, int size, TcpOptions options, ServerSocketChannel server) {
        this.rank = rank;
        this.size = size;
        this.options = options;
        this.server = server;
        this.channels = new SocketChannel[size];
        this.watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "jccl-tcp-watchdog-" + rank);
            t.setDaemon(true);
            return t;
        });
        this.acceptor = new Thread(this::acceptLoop, "jccl-tcp-accept-" + rank);
        this.acceptor.setDaemon(true);
    }

    /** Listens on an ephemeral port of the bind address. */
    static TcpConnector listen(int rank, int size, TcpOptions options) {
        InetSocketAddress at = new InetSocketAddress(options.bindHost(), 0);
        if (at.isUnresolved()) {
            throw new JcclException("rank " + rank + ": cannot listen on " + options.bindHost() + ": the name does not "
                    + "resolve (" + TcpOptions.BIND_ENV + " names the interface address to listen on)", null);
        }
        ServerSocketChannel server = null;
        try {
            server = ServerSocketChannel.open();
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(at, Math.max(16, size * 2));
        } catch (IOException | RuntimeException e) { // RuntimeException: an address of an unsupported family
            closeQuietly(server);
            throw new JcclException("rank " + rank + ": cannot listen on " + options.bindHost() + ": "
                    + e.getMessage(), e);
        }
        return new TcpConnector(rank, size, options, server);
    }

    /**
     * Connects to every other rank, meeting them through {@code store}; on failure the connections made so far
     * stay in {@link #channels()}.
     *
     * @throws JcclException naming the ranks that did not connect within the connect timeout
     */
    void establish(Store store) {
        long deadline = System.nanoTime() + options.connectTimeout().toNanos();
        try {
            store.setString("tcp/addr/" + rank, advertisedAddress());
        } catch (IOException e) {
            throw new JcclException("rank " + rank + ": cannot determine the address to advertise", e);
        }
        acceptor.start();
        for (int peer = 0; peer < rank; peer++) {
            Duration left = Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
            String addr;
            try {
                addr = store.getString("tcp/addr/" + peer, left);
            } catch (io.jccl.store.StoreException e) {
                throw SetUpTimeouts.namingPeer(e, rank, peer, " did not publish its TCP address",
                        options.connectTimeout());
            }
            register(peer, connectTo(peer, addr, deadline, store));
        }
        while (true) {
            synchronized (channels) {
                List<Integer> missing = new ArrayList<>();
                for (int p = rank + 1; p < size; p++) {
                    if (channels[p] == null) {
                        missing.add(p);
                    }
                }
                if (missing.isEmpty()) {
                    break;
                }
                long leftMs = (deadline - System.nanoTime()) / 1_000_000;
                if (leftMs <= 0) {
                    throw new JcclException("rank " + rank + ": ranks " + missing + " did not connect within "
                            + options.connectTimeout().toMillis() + " ms", null);
                }
                try {
                    channels.wait(Math.min(leftMs, LOOK_MILLIS));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new JcclException("rank " + rank + ": interrupted while connecting", e);
                }
            }
            lookForFailure(store); // outside the lock, which the connections being admitted take
        }
    }

    /** The longest a wait for the peers (to dial in, or to listen) goes without {@link #lookForFailure}. */
    static final long LOOK_MILLIS = 100;

    /**
     * Reads this rank's own address back from {@code store}, where it is: a store that fails its reads once some
     * rank's set-up has failed (the rendezvous's publishes "rank r: reason" and throws it from every read) throws
     * that failure here. So a rank waiting for a peer that failed before it could dial in, or that stopped
     * listening, ends with that peer's reason at once, instead of at the connect timeout saying only that the peer
     * did not connect. The transport knows nothing of how the failure is published: the store is the seam.
     */
    private void lookForFailure(Store store) {
        store.get("tcp/addr/" + rank, Duration.ofMillis(LOOK_MILLIS));
    }

    /** A copy of the connections by peer (null where there is none, and at this rank). */
    SocketChannel[] channels() {
        synchronized (channels) {
            return channels.clone();
        }
    }

    private String advertisedAddress() throws IOException {
        String host = options.advertiseHost();
        if (host == null) {
            // every interface (0.0.0.0, ::): this host's address, which peers can dial
            host = ((InetSocketAddress) server.getLocalAddress()).getAddress().isAnyLocalAddress()
                    ? InetAddress.getLocalHost().getHostAddress() : options.bindHost();
        }
        return host + ":" + ((InetSocketAddress) server.getLocalAddress()).getPort();
    }

    private SocketChannel connectTo(int peer, String addr, long deadline, Store store) {
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
                return ch;
            } catch (Handshake.RefusedException e) {
                closeQuietly(ch);
                throw new JcclException("rank " + rank + ": rank " + peer + " at " + addr
                        + " refused the connection: " + e.getMessage(), e);
            } catch (IOException e) {
                closeQuietly(ch);
                last = e;
                lookForFailure(store); // the peer's set-up may have failed, and its listener with it
                sleep(backoffMs);
                backoffMs = Math.min(backoffMs * 2, 500);
            }
        }
        throw new JcclException("rank " + rank + ": could not connect to rank " + peer + " at " + addr
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
        handshaking.add(ch);
        if (closed) { // close() ran before this handshake was listed: it would not have closed it
            closeQuietly(ch);
        }
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
                    rank, size); // refuses a client of another world size
            return c.rank;
        } finally {
            handshaking.remove(ch);
            guard.cancel(false);
        }
    }

    /** The channels in a handshake now: {@link #close} closes them, as their guards would have. */
    private final java.util.Set<SocketChannel> handshaking = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

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
            synchronized (channels) {
                if (peer <= rank || peer >= size || channels[peer] != null || closing) {
                    throw new Handshake.RefusedException("unexpected connection claiming rank " + peer);
                }
                channels[peer] = ch;
                channels.notifyAll();
            }
        } catch (IOException e) {
            LOG.warn("rank {}: refused a connection from {}: {}", rank, from, Handshake.why(e));
            closeQuietly(ch);
        }
    }

    private void register(int peer, SocketChannel ch) {
        synchronized (channels) {
            channels[peer] = ch;
            channels.notifyAll();
        }
    }

    private static String remote(SocketChannel ch) {
        try {
            return String.valueOf(ch.getRemoteAddress());
        } catch (IOException e) {
            return "an address that is already gone";
        }
    }

    /** Admits no more connections and releases the port; connections already made are the caller's. */
    void stopListening() {
        synchronized (channels) {
            closing = true;
        }
        closeQuietly(server);
    }

    /** Runs {@code task} every {@code millis} on the watchdog's thread, until {@link #close}. */
    void every(long millis, Runnable task) {
        try {
            watchdog.scheduleWithFixedDelay(() -> {
                try {
                    task.run();
                } catch (RuntimeException e) { // a later run must still come
                    LOG.warn("rank {}: the TCP watchdog's task failed", rank, e);
                }
            }, millis, millis, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closed already: nothing left to watch
        }
    }

    /**
     * {@link #stopListening}, ends the handshake watchdog, and closes the channels still in a handshake, which their
     * guards (discarded with the watchdog) would have closed: a handshake with a client that sends nothing (a
     * partitioned peer) held its admitting thread and socket until TCP's keepalive gave up, two hours on Linux's
     * defaults.
     */
    @Override
    public void close() {
        closed = true;
        stopListening();
        watchdog.shutdownNow();
        for (SocketChannel ch : handshaking) {
            closeQuietly(ch);
        }
    }

    static void closeQuietly(Closeable c) {
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
            throw new JcclException("interrupted while connecting", e);
        }
    }
}
