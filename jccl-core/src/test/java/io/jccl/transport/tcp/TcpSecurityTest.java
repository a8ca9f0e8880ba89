package io.jccl.transport.tcp;

import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.ReduceOp;
import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.store.InMemoryStore;
import io.jccl.store.StoreException;
import io.jccl.store.TcpStore;
import io.jccl.store.TcpStoreServer;
import io.jccl.security.Handshake;
import io.jccl.security.HandshakeDescriptor;
import io.jccl.security.JobSecret;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Intruders at a rank's port are refused without disturbing the job; stores authenticate too. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpSecurityTest {
    private static final java.util.concurrent.Executor THREADS = r -> {
        Thread t = new Thread(r);
        t.setDaemon(true);
        t.start();
    };

    private static List<Communicator> job(int world, InMemoryStore store, JobSecret secret) {
        List<CompletableFuture<Communicator>> fs = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            int rank = r;
            fs.add(CompletableFuture.supplyAsync(() -> new DefaultCommunicator(
                    TcpTransport.connect(rank, world, store, TcpOptions.loopback(secret)),
                    CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(20))), THREADS));
        }
        List<Communicator> comms = new ArrayList<>();
        fs.forEach(f -> comms.add(f.join()));
        return comms;
    }

    private static void allReduceWorks(List<Communicator> comms) {
        List<CompletableFuture<float[]>> fs = new ArrayList<>();
        for (Communicator c : comms) {
            fs.add(CompletableFuture.supplyAsync(() -> {
                float[] x = {c.rank(), 1};
                c.allReduce(x, ReduceOp.SUM);
                return x;
            }, THREADS));
        }
        for (CompletableFuture<float[]> f : fs) {
            assertArrayEquals(new float[] {3, 3}, f.join());
        }
    }

    private static InetSocketAddress address(InMemoryStore store, int rank) {
        String a = store.getString("tcp/addr/" + rank, Duration.ofSeconds(1));
        int c = a.lastIndexOf(':');
        return new InetSocketAddress(a.substring(0, c), Integer.parseInt(a.substring(c + 1)));
    }

    @Test
    void shouldRefuseIntrudersAndKeepTheJobRunning() throws Exception {
        InMemoryStore store = new InMemoryStore();
        JobSecret secret = JobSecret.generate();
        List<Communicator> comms = job(3, store, secret);
        InetSocketAddress rank1 = address(store, 1);
        // garbage bytes
        try (Socket s = new Socket()) {
            s.connect(rank1);
            s.getOutputStream().write("GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789".getBytes());
            s.getOutputStream().flush();
            assertTrue(closedByPeer(s), "garbage must be answered by closing the connection");
        }
        // a well-formed handshake with the wrong secret: the server's proof does not verify
        try (Socket s = new Socket()) {
            s.connect(rank1);
            Handshake.RefusedException e = assertThrows(Handshake.RefusedException.class, () -> Handshake.client(
                    s.getInputStream(), s.getOutputStream(), JobSecret.generate(),
                    HandshakeDescriptor.PURPOSE_TRANSPORT, 2, 3));
            assertTrue(e.getMessage().contains("failed to prove the job secret"), e.getMessage());
        }
        // the right secret, but a rank that is already connected: the handshake succeeds (the server checks the
        // rank after it), then rank 1 refuses the connection, closes it and logs why, naming the rank claimed
        PrintStream err = System.err;
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8)); // slf4j-simple looks System.err up
        try (Socket s = new Socket()) {
            s.connect(rank1);
            int server = Handshake.client(s.getInputStream(), s.getOutputStream(), secret,
                    HandshakeDescriptor.PURPOSE_TRANSPORT, 2, 3);
            assertEquals(1, server);
            assertTrue(closedByPeer(s), "a duplicate rank must be disconnected");
            String refusal = "rank 1: refused a connection from ";
            String why = "unexpected connection claiming rank 2";
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (!logged(log, refusal, why) && System.nanoTime() < until) {
                Thread.sleep(20); // the log line follows the close
            }
            assertTrue(logged(log, refusal, why), () -> "no refusal naming rank 2 logged: "
                    + log.toString(StandardCharsets.UTF_8));
        } finally {
            System.setErr(err);
        }
        allReduceWorks(comms);
        comms.forEach(Communicator::close);
        // ports are released
        assertThrows(IOException.class, () -> {
            try (Socket s = new Socket()) {
                s.connect(rank1, 1000);
            }
        });
    }

    /** Whether a line of {@code log} holds {@code a} and then {@code b}. */
    private static boolean logged(ByteArrayOutputStream log, String a, String b) {
        for (String line : log.toString(StandardCharsets.UTF_8).split("\n")) {
            int i = line.indexOf(a);
            if (i >= 0 && line.indexOf(b, i) > 0) {
                return true;
            }
        }
        return false;
    }

    /** Whether the peer closes the connection (end of stream or reset) after what was sent. */
    private static boolean closedByPeer(Socket s) {
        try {
            s.setSoTimeout(15_000);
            byte[] buf = new byte[256];
            while (true) {
                int n = s.getInputStream().read(buf);
                if (n < 0) {
                    return true;
                }
            }
        } catch (java.net.SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true; // reset
        }
    }

    @Test
    void shouldReportAStoreThatIsDown() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        StoreException e = assertThrows(StoreException.class,
                () -> TcpStore.connect("127.0.0.1", port, JobSecret.generate(), Duration.ofMillis(500)));
        assertTrue(e.getMessage().contains("no store answered at 127.0.0.1:" + port + " within 500 ms"),
                e.getMessage());
    }

    @Test
    void shouldRefuseAStoreClientWithTheWrongSecret() {
        try (TcpStoreServer server = TcpStoreServer.start("127.0.0.1", 0, JobSecret.generate())) {
            StoreException e = assertThrows(StoreException.class, () -> TcpStore.connect("127.0.0.1", server.port(),
                    JobSecret.generate(), Duration.ofSeconds(5)));
            assertTrue(e.getMessage().contains("refused"), e.getMessage());
            JobSecret ok = JobSecret.generate();
            try (TcpStoreServer s2 = TcpStoreServer.start("127.0.0.1", 0, ok);
                 TcpStore c = TcpStore.connect("127.0.0.1", s2.port(), ok, Duration.ofSeconds(5))) {
                c.setString("k", "v");
                assertTrue(c.getString("k", Duration.ofSeconds(1)).equals("v"));
                assertTrue(c.add("n", 5) == 5 && c.add("n", 2) == 7);
                StoreException t = assertThrows(StoreException.class, () -> c.get("missing", Duration.ofMillis(50)));
                assertTrue(t.getMessage().contains("missing"), t.getMessage());
            }
        }
    }
}
