package io.jccl.store;

import io.jccl.security.Handshake;
import io.jccl.security.HandshakeDescriptor;
import io.jccl.security.JobSecret;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static io.jccl.store.StoreProtocolDescriptor.*;

/** A client of {@link TcpStoreServer}. Thread-safe: one request at a time. */
public final class TcpStore implements Store {
    private final String host;
    private final int port;
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    /**
     * How long a request may go unanswered beyond what it asks the server to wait (a get's timeout): the connect
     * timeout, at least 10 s. Past it the store's host counts as gone (down, cut off, stopped): without it a client
     * waited forever where no connection close ever came.
     */
    private final long replyMillis;
    /**
     * Set once a request went unanswered or its reply was impossible: the stream may hold a late reply or the rest
     * of a bad one, so the connection is not used again (and is closed).
     */
    private volatile String broken;

    private TcpStore(String host, int port, Socket socket, long replyMillis) throws IOException {
        this.host = host;
        this.port = port;
        this.socket = socket;
        this.replyMillis = replyMillis;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
    }

    /**
     * Connects, retrying with backoff until {@code timeout} (the server may start after the client), and
     * authenticates with {@code secret}.
     *
     * @throws StoreException naming the address if no server answered in time or the handshake failed
     */
    public static TcpStore connect(String host, int port, JobSecret secret, Duration timeout) {
        long deadline = System.nanoTime() + io.jccl.JcclSettings.bounded(timeout).toNanos();
        long backoffMs = 10;
        IOException last = null;
        while (System.nanoTime() - deadline < 0) {
            Socket s = new Socket();
            try {
                long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                s.connect(new InetSocketAddress(host, port), (int) Math.min(left, 5_000));
                s.setTcpNoDelay(true);
                s.setKeepAlive(true);
                s.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(left, 10_000)));
                TcpStore store = new TcpStore(host, port, s,
                        Math.max(10_000, Math.min(timeout.toMillis(), Integer.MAX_VALUE / 2)));
                Handshake.client(store.in, store.out, secret, HandshakeDescriptor.PURPOSE_STORE, -1, 0);
                return store;
            } catch (Handshake.RefusedException e) {
                closeQuietly(s);
                throw new StoreException("store at " + host + ":" + port + " refused: " + e.getMessage(), e);
            } catch (IOException e) {
                closeQuietly(s);
                last = e;
                sleep(backoffMs);
                backoffMs = Math.min(backoffMs * 2, 500);
            } catch (RuntimeException e) { // a failed handshake of another kind: the socket must not stay open
                closeQuietly(s);
                throw e;
            }
        }
        throw new StoreException("no store answered at " + host + ":" + port + " within " + timeout.toMillis()
                + " ms (" + (last == null ? "no attempt" : last.getMessage()) + ")", last);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException("interrupted while connecting to the store", e);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // best effort
        }
    }

    /**
     * One request, failed with the message the server sent where it answers with another status than OK.
     * {@code waitMillis}: how long the server may wait before it answers (a get's timeout), else 0.
     */
    private Response call(byte op, String key, byte[] value, long arg, long waitMillis) {
        Response r = request(op, key, value, arg, waitMillis);
        if (r.status != STATUS_OK) {
            throw new StoreException(new String(r.body, StandardCharsets.UTF_8));
        }
        return r;
    }

    /** One request and its reply, whatever its status; as {@link #call}. */
    private synchronized Response request(byte op, String key, byte[] value, long arg, long waitMillis) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        if (k.length > MAX_KEY_LENGTH || value.length > MAX_VALUE_LENGTH) {
            throw new IllegalArgumentException("store key or value too long: key=" + k.length + " bytes (max "
                    + MAX_KEY_LENGTH + "), value=" + value.length + " bytes (max " + MAX_VALUE_LENGTH + ")");
        }
        if (broken != null) {
            throw new StoreException(broken);
        }
        long answerWithin = Math.min(Integer.MAX_VALUE, Math.max(0, waitMillis) + replyMillis);
        try {
            socket.setSoTimeout((int) answerWithin);
            out.writeByte(op);
            out.writeByte(0);
            out.writeShort(k.length);
            out.writeInt(value.length);
            out.writeLong(arg);
            out.write(k);
            out.write(value);
            out.flush();
            byte status = in.readByte();
            in.readByte();
            in.readShort();
            int len = in.readInt();
            long result = in.readLong();
            if (len < 0 || len > MAX_VALUE_LENGTH) {
                // what follows is not a reply's body: the next request would read it as its reply
                broken = "the store at " + host + ":" + port + " sent an impossible length " + len + " (not a jccl "
                        + "store, or a corrupted stream): the connection is not used again";
                closeQuietly(socket);
                throw new StoreException(broken);
            }
            byte[] body = new byte[len];
            in.readFully(body);
            return new Response(status, result, body);
        } catch (java.net.SocketTimeoutException e) {
            broken = "the store at " + host + ":" + port + " did not answer within " + answerWithin + " ms: its host "
                    + "is down, cut off or stopped (the process serving it: rank 0, unless JCCL_STORE=external)";
            closeQuietly(socket);
            throw new StoreException(broken, e);
        } catch (IOException e) {
            throw new StoreException("lost the store at " + host + ":" + port + " ("
                    + (e instanceof java.io.EOFException || e.getMessage() == null ? "it closed the connection"
                    : e.getMessage()) + "): the process serving it (rank 0, unless JCCL_STORE=external) has "
                    + "exited or failed", e);
        }
    }

    private static final class Response {
        final byte status;
        final long result;
        final byte[] body;

        Response(byte status, long result, byte[] body) {
            this.status = status;
            this.result = result;
            this.body = body;
        }
    }

    @Override
    public void set(String key, byte[] value) {
        call(OP_SET, key, value, 0, 0);
    }

    /**
     * Asks the server for at most {@link TcpStoreServer#MAX_GET_TIMEOUT_MS} at a time, and again while
     * {@code timeout} has not passed: a get of a longer timeout failed once the server's cap had passed, saying it
     * had timed out after the cap.
     */
    @Override
    public byte[] get(String key, Duration timeout) {
        long deadline = System.nanoTime() + io.jccl.JcclSettings.bounded(timeout).toNanos();
        while (true) {
            // rounded up: the server's wait, which starts once it has the request, ends after the caller's deadline
            long ms = Math.min(TcpStoreServer.MAX_GET_TIMEOUT_MS,
                    (Math.max(0, deadline - System.nanoTime()) + 999_999) / 1_000_000);
            Response r = request(OP_GET, key, new byte[0], ms, ms);
            if (r.status == STATUS_OK) {
                return r.body;
            }
            if (r.status != STATUS_TIMEOUT) {
                throw new StoreException(new String(r.body, StandardCharsets.UTF_8));
            }
            if (System.nanoTime() - deadline >= 0) {
                throw StoreException.timedOut(key, timeout, " in the store at " + host + ":" + port, null);
            }
        }
    }

    @Override
    public long add(String key, long delta) {
        return call(OP_ADD, key, new byte[0], delta, 0).result;
    }

    @Override
    public boolean check(String key) {
        return call(OP_CHECK, key, new byte[0], 0, 0).result != 0;
    }

    @Override
    public boolean delete(String key) {
        return call(OP_DELETE, key, new byte[0], 0, 0).result != 0;
    }

    @Override
    public void close() {
        closeQuietly(socket);
    }

    /**
     * This end's address of the connection to the store: the address of the interface that reaches the master,
     * which is what peers on other hosts can reach too (host names may not resolve).
     */
    public String localAddress() {
        return socket.getLocalAddress().getHostAddress();
    }
}
