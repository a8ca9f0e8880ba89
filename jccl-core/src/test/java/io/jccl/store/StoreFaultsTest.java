package io.jccl.store;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import io.jccl.security.Handshake;
import io.jccl.security.HandshakeDescriptor;
import io.jccl.security.JobSecret;

import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Stores whose other end misbehaves: each fails, in bounded time and saying why, and leaves nothing behind. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StoreFaultsTest {

    /**
     * A process that holds a file store's lock file and does not let go (a rank stopped while adding, a stuck NFS
     * lock): every other rank's add waited for it for ever. It now fails once the store's lock timeout has passed,
     * naming the directory; and adds again once the lock is free.
     */
    @Test
    void anAddWhoseLockAnotherProcessHoldsFailsAtTheStoresTimeout(@TempDir Path dir) throws Exception {
        FileStore store = new FileStore(dir, Duration.ofMillis(500));
        assertEquals(1, store.add("n", 1)); // makes the lock file
        // fcntl locks, as Java's: held by another process until its stdin closes
        Process holder = new ProcessBuilder("python3", "-c", "import fcntl, os, sys\n"
                + "fd = os.open(sys.argv[1], os.O_RDWR)\n"
                + "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
                + "print('held', flush=True)\n"
                + "sys.stdin.read()\n", dir.resolve(".lock").toString()).redirectErrorStream(true).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(),
                    StandardCharsets.UTF_8));
            assertEquals("held", out.readLine());
            long start = System.nanoTime();
            CompletableFuture<Long> add = CompletableFuture.supplyAsync(() -> store.add("n", 1));
            StoreException e = assertThrows(StoreException.class, () -> {
                try {
                    add.get(20, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException x) {
                    throw x.getCause();
                }
            });
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms >= 500 && ms < 10_000, ms + " ms");
            assertTrue(e.getMessage().contains("cannot add to key 'n' in " + dir) && e.getMessage().contains(".lock")
                    && e.getMessage().contains("500 ms"), e.getMessage());
        } finally {
            holder.getOutputStream().close();
            holder.destroy();
            assertTrue(holder.waitFor(20, TimeUnit.SECONDS));
        }
        assertEquals(2, store.add("n", 1));
    }

    /**
     * A store server that answers one authenticated client's requests with {@code replies} (each the raw bytes of
     * a reply), in order, and records each request's argument; then closes the connection.
     */
    private static final class ScriptedServer implements AutoCloseable {
        final JobSecret secret = JobSecret.generate();
        final java.net.ServerSocket server;
        final java.util.concurrent.BlockingQueue<Long> args = new java.util.concurrent.LinkedBlockingQueue<>();
        final CompletableFuture<Void> served;

        ScriptedServer(List<byte[]> replies) throws java.io.IOException {
            server = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
            served = CompletableFuture.runAsync(() -> {
                try (java.net.Socket s = server.accept()) {
                    s.setSoTimeout(30_000);
                    DataInputStream in = new DataInputStream(s.getInputStream());
                    DataOutputStream out = new DataOutputStream(s.getOutputStream());
                    Handshake.server(in, out, secret, HandshakeDescriptor.PURPOSE_STORE, -1);
                    for (byte[] reply : replies) {
                        in.readByte();
                        in.readByte();
                        int keyLength = in.readUnsignedShort();
                        int valueLength = in.readInt();
                        args.add(in.readLong());
                        in.readFully(new byte[keyLength + valueLength]);
                        out.write(reply);
                        out.flush();
                    }
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
        }

        TcpStore connect() {
            return TcpStore.connect("127.0.0.1", server.getLocalPort(), secret, Duration.ofSeconds(10));
        }

        /** The bytes of a reply of {@code status}, declaring {@code length} bytes of body and carrying {@code body}. */
        static byte[] reply(byte status, int length, String body) {
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            return java.nio.ByteBuffer.allocate(StoreProtocolDescriptor.HEADER_LENGTH + b.length).put(status)
                    .put((byte) 0).putShort((short) 0).putInt(length).putLong(0).put(b).array();
        }

        static byte[] reply(byte status, String body) {
            return reply(status, body.getBytes(StandardCharsets.UTF_8).length, body);
        }

        @Override
        public void close() throws java.io.IOException {
            server.close();
        }
    }

    /**
     * The server waits at most {@link TcpStoreServer#MAX_GET_TIMEOUT_MS} (24 h) per get, and its client was to ask
     * again: a get of a longer timeout failed once the cap had passed, saying it had "timed out after 86400000 ms".
     * The client now asks for at most the cap at a time, and again until its own deadline.
     */
    @Test
    void aGetLongerThanTheServersCapAsksAgainUntilItsOwnDeadline() throws Exception {
        try (ScriptedServer server = new ScriptedServer(List.of(
                ScriptedServer.reply(StoreProtocolDescriptor.STATUS_TIMEOUT,
                        "timed out after " + TcpStoreServer.MAX_GET_TIMEOUT_MS + " ms waiting for key 'k'"),
                ScriptedServer.reply(StoreProtocolDescriptor.STATUS_OK, "v")));
             TcpStore client = server.connect()) {
            assertArrayEquals("v".getBytes(StandardCharsets.UTF_8), client.get("k", Duration.ofDays(3)));
            assertEquals(TcpStoreServer.MAX_GET_TIMEOUT_MS, server.args.take());
            assertEquals(TcpStoreServer.MAX_GET_TIMEOUT_MS, server.args.take());
            server.served.get(10, TimeUnit.SECONDS);
        }
        // a get that times out still says after how long, the caller's
        JobSecret secret = JobSecret.generate();
        try (TcpStoreServer server = TcpStoreServer.start("127.0.0.1", 0, secret);
             TcpStore client = TcpStore.connect("127.0.0.1", server.port(), secret, Duration.ofSeconds(10))) {
            StoreException e = assertThrows(StoreException.class, () -> client.get("k", Duration.ofMillis(300)));
            assertTrue(e.getMessage().startsWith("timed out after 300 ms waiting for key 'k'"), e.getMessage());
        }
    }

    /**
     * A client that stops in the middle of a request (its process stopped, its host gone) held its server thread
     * until the store closed: a long-lived {@code jccl store} collected such threads. The server now closes the
     * connection once the rest of a begun request has not come for its request timeout ({@link
     * TcpStoreServer#REQUEST_TIMEOUT} by default; 3 s here), and serves the others meanwhile.
     */
    @Test
    void aClientThatStopsInTheMiddleOfARequestIsClosedAfterTheRequestTimeout() throws Exception {
        JobSecret secret = JobSecret.generate();
        int timeoutMs = 3000;
        try (TcpStoreServer server = TcpStoreServer.start("127.0.0.1", 0, secret, Duration.ofMillis(timeoutMs));
             java.net.Socket stalled = new java.net.Socket("127.0.0.1", server.port())) {
            java.io.InputStream in = stalled.getInputStream();
            java.io.OutputStream out = stalled.getOutputStream();
            Handshake.client(in, out, secret, HandshakeDescriptor.PURPOSE_STORE, 0, 1);
            out.write(new byte[] {StoreProtocolDescriptor.OP_SET, 0, 0}); // 3 of a request header's 16 bytes
            out.flush();
            long t0 = System.nanoTime();
            try (TcpStore client = TcpStore.connect("127.0.0.1", server.port(), secret, Duration.ofSeconds(10))) {
                client.set("k", "v".getBytes(StandardCharsets.UTF_8)); // the others are served meanwhile
                assertArrayEquals("v".getBytes(StandardCharsets.UTF_8), client.get("k", Duration.ofSeconds(5)));
            }
            stalled.setSoTimeout(10 * timeoutMs);
            assertEquals(-1, in.read(), "the server answered a request it never had whole");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms >= timeoutMs - 1000 && ms < 3 * timeoutMs,
                    "closed after " + ms + " ms");
        }
    }

    /**
     * A reply declaring an impossible length failed its request but left the connection in use: the next request
     * read the bytes that followed as its reply (here a well-formed "OK, v" the server never meant for it). The
     * connection is now closed and every later request fails saying why.
     */
    @Test
    void aReplyOfAnImpossibleLengthClosesTheConnection() throws Exception {
        byte[] bad = ScriptedServer.reply(StoreProtocolDescriptor.STATUS_OK, -1, "");
        byte[] leftover = ScriptedServer.reply(StoreProtocolDescriptor.STATUS_OK, "v");
        byte[] first = java.nio.ByteBuffer.allocate(bad.length + leftover.length).put(bad).put(leftover).array();
        try (ScriptedServer server = new ScriptedServer(List.of(first, ScriptedServer.reply(
                StoreProtocolDescriptor.STATUS_OK, "v")));
             TcpStore client = server.connect()) {
            StoreException e = assertThrows(StoreException.class, () -> client.get("k", Duration.ofSeconds(5)));
            assertTrue(e.getMessage().contains("impossible length -1"), e.getMessage());
            StoreException again = assertThrows(StoreException.class, () -> client.get("other", Duration.ofSeconds(5)));
            assertTrue(again.getMessage().contains("impossible length -1")
                    && again.getMessage().contains("not used again"), again.getMessage());
        }
    }

    /**
     * A handshake that failed with a RuntimeException (here a missing secret's NullPointerException, once the
     * server's challenge had come) left the client's socket open: the server waited for the client's proof until
     * its own timeout. The socket is now closed, and the server sees the connection end at once.
     */
    @Test
    void aConnectWhoseHandshakeThrowsClosesItsSocket() throws Exception {
        JobSecret secret = JobSecret.generate();
        try (java.net.ServerSocket server = new java.net.ServerSocket(0, 1,
                java.net.InetAddress.getLoopbackAddress())) {
            CompletableFuture<String> serverSide = CompletableFuture.supplyAsync(() -> {
                try (java.net.Socket s = server.accept()) {
                    s.setSoTimeout(20_000);
                    Handshake.server(s.getInputStream(), s.getOutputStream(), secret,
                            HandshakeDescriptor.PURPOSE_STORE, -1);
                    return "accepted";
                } catch (java.io.IOException e) {
                    return e.toString();
                }
            });
            assertThrows(NullPointerException.class,
                    () -> TcpStore.connect("127.0.0.1", server.getLocalPort(), null, Duration.ofSeconds(5)));
            long start = System.nanoTime();
            String seen = serverSide.get(30, TimeUnit.SECONDS);
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(seen.contains("connection closed during the handshake (proof)"), seen);
            assertTrue(ms < 10_000, ms + " ms");
        }
    }

    /**
     * A set whose value could not be written or moved into place (a full disk; here a directory where the key's
     * file goes) left its temporary file in the store's directory. It is now removed.
     */
    @Test
    void aFailedSetLeavesNoTemporaryFile(@TempDir Path dir) throws Exception {
        FileStore store = new FileStore(dir, Duration.ofSeconds(10));
        Path target = dir.resolve("k" + java.util.HexFormat.of().formatHex("x".getBytes(StandardCharsets.UTF_8)));
        java.nio.file.Files.createDirectories(target.resolve("in-the-way"));
        StoreException e = assertThrows(StoreException.class, () -> store.setString("x", "v"));
        assertTrue(e.getMessage().contains("cannot set key 'x' in " + dir), e.getMessage());
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(dir)) {
            assertEquals(List.of(target), files.toList());
        }
    }
}
