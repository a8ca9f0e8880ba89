package io.jccl.store;

import io.jccl.security.Handshake;
import io.jccl.security.HandshakeDescriptor;
import io.jccl.security.JobSecret;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static io.jccl.store.StoreProtocolDescriptor.*;

/**
 * Serves a {@link Store} over TCP (torch's TCPStore master): run by rank 0, or standalone. One thread accepts;
 * each authenticated client gets a thread, which ends when its connection closes, even while it waits for a key
 * for a get of that client. Clients that fail the handshake are logged and dropped without disturbing the others.
 */
public final class TcpStoreServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TcpStoreServer.class);
    private static final int HANDSHAKE_TIMEOUT_MS = 10_000;
    /**
     * Once a request's first byte has come, each read of the rest waits at most this long by default: a client that
     * stops in the middle of a request (its process stopped, its host gone) frees its server thread then, rather
     * than when the store closes. Long enough for a network stall that TCP's retransmissions ride out. Between
     * requests a connection may stay idle as long as its client lives.
     */
    static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);
    /** {@link #REQUEST_TIMEOUT}, or a test's. */
    private final int requestTimeoutMs;

    private final ServerSocket server;
    private final InMemoryStore store = new InMemoryStore();
    private final JobSecret secret;
    private final Set<Socket> clients = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private volatile boolean closed;
    /** Connections in their handshake: at most this many at once, the others closed at once (a flood, a scan). */
    private final java.util.concurrent.Semaphore handshakes = new java.util.concurrent.Semaphore(MAX_HANDSHAKES);
    /** The most connections in their handshake at once. */
    public static final int MAX_HANDSHAKES = 64;
    /** Why the first refused connections were refused, and from where ({@link #refusals}); guarded by itself. */
    private final java.util.List<String> refused = new java.util.ArrayList<>();
    private int refusedCount;

    private TcpStoreServer(ServerSocket server, JobSecret secret, Duration requestTimeout) {
        this.requestTimeoutMs = (int) Math.min(Integer.MAX_VALUE, requestTimeout.toMillis());
        this.server = server;
        this.secret = secret;
        this.acceptor = new Thread(this::acceptLoop, "jccl-store-accept-" + server.getLocalPort());
        this.acceptor.setDaemon(true);
        this.acceptor.start();
    }

    /** Listens on {@code host:port} ({@code port} 0 picks a free one). */
    public static TcpStoreServer start(String host, int port, JobSecret secret) {
        return start(host, port, secret, REQUEST_TIMEOUT);
    }

    /** As {@link #start(String, int, JobSecret)}, a begun request's reads waiting at most {@code requestTimeout}. */
    static TcpStoreServer start(String host, int port, JobSecret secret, Duration requestTimeout) {
        ServerSocket s = null;
        try {
            s = new ServerSocket();
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(host, port), 128);
            return new TcpStoreServer(s, secret, requestTimeout);
        } catch (IOException | RuntimeException | Error e) {
            if (s != null) {
                try {
                    s.close();
                } catch (IOException closing) {
                    e.addSuppressed(closing);
                }
            }
            if (e instanceof IOException) {
                throw new StoreException("cannot listen for the store on " + host + ":" + port + ": "
                        + e.getMessage(), e);
            }
            if (e instanceof RuntimeException) {
                throw (RuntimeException) e;
            }
            throw (Error) e;
        }
    }

    public int port() {
        return server.getLocalPort();
    }

    /**
     * Accepts until closed, at most {@link #MAX_HANDSHAKES} connections in their handshake at once: past that, the
     * next waits in the kernel's backlog until one ends (each ends within the handshake's 10 s), so that a flood of
     * silent connections costs a bounded number of threads and a real client is served late, not refused. A
     * connection whose thread cannot start (no memory for it, a process limit) is closed at once; if accepting itself
     * fails, the listening socket is closed, so that clients are refused at once rather than left unserved in the
     * backlog until their timeout.
     */
    private void acceptLoop() {
        try {
            while (!closed) {
                if (!handshakes.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                    continue; // looks at closed again
                }
                Socket s;
                try {
                    s = server.accept();
                } catch (IOException | RuntimeException | Error e) {
                    handshakes.release();
                    throw e;
                }
                try {
                    Thread t = new Thread(() -> serve(s), "jccl-store-client");
                    t.setDaemon(true);
                    t.start();
                } catch (RuntimeException | Error e) {
                    handshakes.release();
                    closeQuietly(s);
                    LOG.warn("store cannot serve a connection from {}: {}", s.getRemoteSocketAddress(), e.toString());
                    java.util.concurrent.locks.LockSupport.parkNanos(10_000_000L); // not a busy loop while it lasts
                }
            }
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            if (!closed) {
                LOG.error("store stopped accepting connections; closing it, so that clients are refused", e);
                try {
                    server.close();
                } catch (IOException ignored) {
                    // closed anyway
                }
            }
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // gone anyway
        }
    }

    private void refused(Socket s, String why) {
        LOG.warn("store refused a connection from {}: {}", s.getRemoteSocketAddress(), why);
        synchronized (refused) {
            refusedCount++;
            if (refused.size() < 3) {
                refused.add(why + " (from " + s.getRemoteSocketAddress() + ")");
            }
        }
    }

    /**
     * The connections this store refused so far, for a failure message ("the store refused 2 connections: ..."), the
     * reasons of the first three; null if none. A rank given another {@code JCCL_SECRET} appears here.
     */
    public String refusals() {
        synchronized (refused) {
            if (refusedCount == 0) {
                return null;
            }
            return "the store refused " + (refusedCount == 1 ? "1 connection" : refusedCount + " connections") + ": "
                    + String.join("; ", refused) + (refusedCount > refused.size() ? "; ..." : "");
        }
    }

    private void serve(Socket s) {
        clients.add(s);
        boolean inHandshake = true; // its permit (handshakes) held
        try (s) {
            s.setTcpNoDelay(true);
            s.setSoTimeout(HANDSHAKE_TIMEOUT_MS);
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
            try {
                Handshake.server(in, out, secret, HandshakeDescriptor.PURPOSE_STORE, -1);
            } catch (IOException e) {
                refused(s, io.jccl.security.Handshake.why(e));
                return;
            } finally {
                inHandshake = false;
                handshakes.release();
            }
            s.setSoTimeout(0);
            while (!closed) {
                byte op;
                try {
                    op = in.readByte();
                } catch (java.io.EOFException e) {
                    return;
                }
                s.setSoTimeout(requestTimeoutMs);
                in.readByte();
                int keyLen = in.readUnsignedShort();
                int valueLen = in.readInt();
                long arg = in.readLong();
                if (keyLen > MAX_KEY_LENGTH || valueLen < 0 || valueLen > MAX_VALUE_LENGTH) {
                    LOG.warn("store closing connection from {}: impossible lengths key={} value={}",
                            s.getRemoteSocketAddress(), keyLen, valueLen);
                    return;
                }
                byte[] keyBytes = new byte[keyLen];
                in.readFully(keyBytes);
                String key = new String(keyBytes, StandardCharsets.UTF_8);
                byte[] value = new byte[valueLen];
                in.readFully(value);
                s.setSoTimeout(0);
                respond(s, in, out, op, key, value, arg);
            }
        } catch (SocketException e) {
            // client went away
        } catch (SocketTimeoutException e) {
            LOG.warn("store closing connection from {}: it stopped in the middle of a request (nothing for {} ms)",
                    s.getRemoteSocketAddress(), requestTimeoutMs);
        } catch (IOException e) {
            if (!closed) {
                LOG.debug("store connection ended: {}", e.toString());
            }
        } finally {
            if (inHandshake) {
                handshakes.release();
            }
            clients.remove(s);
        }
    }

    /** A get waits at most this long per request (a client asking for more waits again). */
    static final long MAX_GET_TIMEOUT_MS = 24L * 3600 * 1000;

    /**
     * How often the thread of a get that waits for its key looks whether its client is still connected: a client
     * that dies waiting frees that thread within this, not when the key comes or the get's timeout passes.
     */
    static final long CLIENT_CHECK_NANOS = 500_000_000L;

    /**
     * Answers one request of the client of {@code s} (which reads {@code in}, writes {@code out}).
     *
     * @throws IOException if the connection ended, the client's answer unsent: a get that waited for its key found
     *                     the client gone or the server closed ({@link #awaitKey})
     */
    private void respond(Socket s, DataInputStream in, DataOutputStream out, byte op, String key, byte[] value,
                         long arg) throws IOException {
        byte status = STATUS_OK;
        long result = 0;
        byte[] body = new byte[0];
        try {
            switch (op) {
                case OP_SET: store.set(key, value); break;
                case OP_GET:
                    if (arg < 0) {
                        throw new IllegalArgumentException("a get of key '" + key + "' with a negative timeout: "
                                + arg + " ms");
                    }
                    body = awaitKey(s, in, key, Math.min(arg, MAX_GET_TIMEOUT_MS));
                    break;
                case OP_ADD: result = store.add(key, arg); break;
                case OP_CHECK: result = store.check(key) ? 1 : 0; break;
                case OP_DELETE: result = store.delete(key) ? 1 : 0; break;
                default:
                    status = STATUS_ERROR;
                    body = ("unknown store opcode " + op).getBytes(StandardCharsets.UTF_8);
            }
        } catch (StoreException e) {
            // only a get that waited in vain is a timeout to the client (which then names the key it waited for);
            // any other failure of the store (interrupted as the server shuts down) is an error
            status = e.timedOutKey() != null ? STATUS_TIMEOUT : STATUS_ERROR;
            body = e.getMessage().getBytes(StandardCharsets.UTF_8);
        } catch (RuntimeException e) {
            // a bad request fails that request, never the connection or the server
            status = STATUS_ERROR;
            body = (e instanceof NumberFormatException ? "key '" + key + "' does not hold a number: "
                    + e.getMessage() : String.valueOf(e.getMessage())).getBytes(StandardCharsets.UTF_8);
        }
        out.writeByte(status);
        out.writeByte(0);
        out.writeShort(0);
        out.writeInt(body.length);
        out.writeLong(result);
        out.write(body);
        out.flush();
    }

    /**
     * The value of {@code key}, waiting up to {@code timeoutMs} until some client sets it, and every
     * {@link #CLIENT_CHECK_NANOS} looking whether the client that asked, on {@code s}, is still connected.
     *
     * @throws StoreException if {@code timeoutMs} passes first (as {@link InMemoryStore#get} says it)
     * @throws IOException if the client closed its connection, or the server closed it
     */
    private byte[] awaitKey(Socket s, DataInputStream in, String key, long timeoutMs) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true) {
            long left = deadline - System.nanoTime();
            byte[] v = store.await(key, Math.max(0, Math.min(left, CLIENT_CHECK_NANOS)));
            if (v != null) {
                return v;
            }
            if (left <= CLIENT_CHECK_NANOS) {
                throw InMemoryStore.timedOut(key, Duration.ofMillis(timeoutMs));
            }
            if (closedByClient(s, in)) {
                throw new EOFException("the client closed its connection while its get of key '" + key
                        + "' waited");
            }
        }
    }

    /**
     * Whether the client of {@code s} has closed its connection: the stream ends. A client whose request waits sends
     * nothing until it has the answer; a byte it sent early all the same stays in {@code in} for its next request.
     *
     * @throws IOException if the connection failed, or the server closed it
     */
    private static boolean closedByClient(Socket s, DataInputStream in) throws IOException {
        s.setSoTimeout(1);
        try {
            in.mark(1);
            int b = in.read();
            in.reset();
            return b < 0;
        } catch (SocketTimeoutException e) {
            return false; // connected, nothing sent
        } finally {
            s.setSoTimeout(0);
        }
    }

    /**
     * Closes once every client has gone, or after {@code grace}: a rank 0 that fails at start-up has often just
     * published why (a marker its peers read and fail with), and closing at once would give the peers still
     * reading a lost connection instead of the reason.
     */
    public void closeWhenIdle(Duration grace) {
        long until = System.nanoTime() + grace.toNanos();
        while (!clients.isEmpty() && System.nanoTime() < until) {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        close();
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing
        }
        for (Socket s : clients) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }
}
