package io.jccl.rendezvous;

import io.jccl.store.InMemoryStore;
import io.jccl.store.StoreException;
import io.jccl.store.TcpStore;
import io.jccl.store.TcpStoreServer;

import io.jccl.JcclException;
import io.jccl.security.JobSecret;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Start-up errors name the variable, the ranks and the values that disagree, never an internal store key. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RendezvousErrorsTest {

    private static final java.util.concurrent.Executor THREADS = r -> {
        Thread t = new Thread(r, "join");
        t.setDaemon(true);
        t.start();
    };

    /**
     * {@code world} ranks that meet through rank 0's TCP store (on a free port), each on a thread of its own: rank r
     * with the configuration {@code configOf(r)} and the launch variables {@code launchOf(r)} (JCCL_RANK and
     * JCCL_WORLD_SIZE added) runs {@code body} on its communicator. Each rank's result, or what it threw (its type
     * and message).
     */
    private static List<CompletableFuture<String>> connectAll(int world,
            java.util.function.IntFunction<io.jccl.CommunicatorConfig> configOf,
            java.util.function.IntFunction<Map<String, String>> launchOf, Duration timeout,
            java.util.function.Function<io.jccl.Communicator, String> body) throws Exception {
        int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        InitMethod init = InitMethod.tcp("127.0.0.1", port);
        JobSecret secret = JobSecret.generate();
        List<CompletableFuture<String>> fs = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            int rank = r;
            io.jccl.CommunicatorConfig config = configOf.apply(rank);
            Map<String, String> vars = new java.util.HashMap<>(launchOf.apply(rank));
            vars.put("JCCL_RANK", Integer.toString(rank));
            vars.put("JCCL_WORLD_SIZE", Integer.toString(world));
            fs.add(CompletableFuture.supplyAsync(() -> {
                try (io.jccl.Communicator c = Rendezvous.connect(init, LaunchEnvironment.from(vars), config, secret,
                        timeout)) {
                    return body.apply(c);
                } catch (RuntimeException e) {
                    return e.toString(); // its type and message
                }
            }, THREADS));
            if (r == 0) {
                Thread.sleep(300); // rank 0's store listens before the others connect to it
            }
        }
        return fs;
    }

    /** A communicator's answer in {@link #connectAll}: its rank. */
    private static String connected(io.jccl.Communicator c) {
        return "connected as rank " + c.rank();
    }

    /** Settings of a rank from the variables {@code vars} alone. */
    private static io.jccl.CommunicatorConfig settings(Map<String, String> vars) {
        return io.jccl.JcclSettings.from(vars, Map.of()).communicatorConfig();
    }

    /** A rank's answer in {@link #connectAll}: its transport and its allreduce of its rank. */
    private static String allReduced(io.jccl.Communicator c) {
        float[] x = {c.rank()};
        c.allReduce(x);
        return c.transportName() + " " + x[0];
    }

    /** Joins {@code ranks[i]} with world size {@code sizes[i]} on threads; each rank's error message, or null. */
    private static List<String> join(int[] ranks, int[] sizes, Duration timeout) {
        InMemoryStore store = new InMemoryStore();
        List<CompletableFuture<String>> fs = new ArrayList<>();
        for (int i = 0; i < ranks.length; i++) {
            int r = ranks[i];
            int w = sizes[i];
            fs.add(CompletableFuture.supplyAsync(() -> {
                try {
                    Rendezvous.join(r, w, store, timeout);
                    return null;
                } catch (JcclException e) {
                    return e.getMessage();
                }
            }, THREADS));
            if (i == 0) {
                // the first rank joins first: a rank that joins after the others completed a world of their own
                // fails alone (they cannot know of it), which this test does not look at
                long until = System.nanoTime() + 5_000_000_000L;
                while (!store.check("join/0") && System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
            }
        }
        List<String> out = new ArrayList<>();
        fs.forEach(f -> out.add(f.join()));
        return out;
    }

    @Test
    void shouldJoinWhenEveryRankAgrees() {
        assertEquals(java.util.Arrays.asList(null, null, null), join(new int[] {2, 0, 1}, new int[] {3, 3, 3},
                Duration.ofSeconds(10)));
    }

    @Test
    void shouldNameTheRanksThatDisagreeOnTheWorldSize() {
        List<String> out = join(new int[] {3, 0, 1, 2}, new int[] {4, 3, 3, 3}, Duration.ofSeconds(20));
        for (String m : out) {
            assertTrue(m != null && (m.matches(".*rank 3 says world size 4, rank [012] says 3.*")
                    || m.matches(".*rank [012] says world size 3, rank 3 says 4.*")), m);
            assertFalse(m.contains("jccl/"), m);
        }
    }

    @Test
    void shouldNameTheRanksThatNeverJoinedAndThoseThatDid() {
        List<String> out = join(new int[] {0, 2}, new int[] {4, 4}, Duration.ofMillis(800));
        for (String m : out) {
            assertTrue(m != null && m.contains("ranks [1, 3] never joined within 800 ms") && m.contains("joined: rank 0 (pid")
                    && m.contains("rank 2 (pid"), m);
        }
    }

    /**
     * A process that took a join slot and died before it said which rank it is: the others waited for its announcement
     * a whole timeout past the join's own deadline, and then failed with the store's raw timeout of "join/0".
     */
    @Test
    void aJoinSlotNeverAnnouncedFailsTheJoinAtItsDeadlineSayingSo() {
        InMemoryStore store = new InMemoryStore();
        store.add("join/count", 1); // slot 0, taken by a process that died before it wrote its rank
        long start = System.nanoTime();
        JcclException e = assertThrows(JcclException.class, // rank 1: rank 0 would stay on to serve the store
                () -> Rendezvous.join(1, 2, store, Duration.ofMillis(800)));
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(e.getMessage().contains("a process took join slot 0 but never said which rank it is"),
                e.getMessage());
        assertTrue(ms < 1_500, "the join took " + ms + " ms, its deadline 800"); // two timeouts before: 1,600 ms
    }

    @Test
    void aJoinSlotHoldingSomethingElseFailsTheJoinSayingSo() {
        InMemoryStore store = new InMemoryStore();
        store.add("join/count", 1);
        store.setString("join/0", "hello");
        JcclException e = assertThrows(JcclException.class,
                () -> Rendezvous.join(0, 1, store, Duration.ofSeconds(5)));
        assertTrue(e.getMessage().contains("join slot 0 of the store holds 'hello', not a rank's announcement"),
                e.getMessage());
    }

    /**
     * Rank 1 has another JCCL_SECRET: it fails at once (rank 0's store cannot prove the secret), and rank 0, which
     * learned only that "rank 1 never joined", now says that its store refused rank 1's connection and why.
     */
    @Test
    void rankZeroSaysThatItsStoreRefusedARankWithAnotherSecret() throws Exception {
        int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        InitMethod init = InitMethod.tcp("127.0.0.1", port);
        List<CompletableFuture<String>> fs = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            Map<String, String> vars = Map.of("JCCL_RANK", Integer.toString(r), "JCCL_WORLD_SIZE", "2");
            JobSecret secret = JobSecret.generate(); // each rank its own
            fs.add(CompletableFuture.supplyAsync(() -> {
                try (io.jccl.Communicator c = Rendezvous.connect(init, LaunchEnvironment.from(vars), settings(vars),
                        secret, Duration.ofSeconds(3))) {
                    return "connected as rank " + c.rank();
                } catch (RuntimeException e) {
                    return e.toString();
                }
            }, THREADS));
            if (r == 0) {
                Thread.sleep(300);
            }
        }
        String rank0 = fs.get(0).get(60, TimeUnit.SECONDS);
        String rank1 = fs.get(1).get(60, TimeUnit.SECONDS);
        assertTrue(rank1.contains("failed to prove the job secret"), rank1);
        assertTrue(rank0.contains("rank 1 never joined") && rank0.contains("the store refused 1 connection: connection "
                + "closed during the handshake (proof): the client closed it after this server's proof of the job "
                + "secret, as a jccl client does when that proof does not verify (its JCCL_SECRET differs"), rank0);
    }

    /**
     * Connections that never finish their handshake (a scan, a flood) got a thread each, without bound; now at most
     * {@link TcpStoreServer#MAX_HANDSHAKES} are in their handshake at once, the rest wait in the backlog, and a real
     * client among them is served once the silent ones' 10 s handshake deadline has passed.
     */
    @Test
    void aFloodOfSilentConnectionsIsCappedAndARealClientIsServedAfterIt() throws Exception {
        JobSecret secret = JobSecret.generate();
        List<java.net.Socket> silent = new ArrayList<>();
        try (TcpStoreServer server = TcpStoreServer.start("127.0.0.1", 0, secret)) {
            try {
                for (int i = 0; i < TcpStoreServer.MAX_HANDSHAKES + 20; i++) {
                    silent.add(new java.net.Socket("127.0.0.1", server.port()));
                }
                Thread.sleep(500);
                long handshaking = Thread.getAllStackTraces().keySet().stream()
                        .filter(t -> t.getName().equals("jccl-store-client")).count();
                assertTrue(handshaking <= TcpStoreServer.MAX_HANDSHAKES, handshaking + " threads in handshakes");
                try (TcpStore client = TcpStore.connect("127.0.0.1", server.port(), secret, Duration.ofSeconds(40))) {
                    client.setString("k", "v");
                    assertArrayEquals("v".getBytes(), client.get("k", Duration.ofSeconds(5)));
                }
                assertTrue(server.refusals() != null && server.refusals().contains("no handshake within the deadline"),
                        String.valueOf(server.refusals()));
            } finally {
                for (java.net.Socket s : silent) {
                    s.close();
                }
            }
        }
    }

    @Test
    void shouldNameARankGivenTwice() {
        List<String> out = join(new int[] {0, 1, 1}, new int[] {3, 3, 3}, Duration.ofSeconds(20));
        for (String m : out) {
            assertTrue(m != null && m.contains("rank 1 joined twice"), m);
        }
    }

    /**
     * A rank given JCCL_TRANSPORT=tcp among ranks given auto skipped the co-location proof the others waited for:
     * every rank waited until its connect timeout and failed without saying why. Now every rank fails at once,
     * naming the rank and both kinds, rank 0 included (its store stays up until the others have read the kinds).
     */
    @Test
    void shouldNameTheRankGivenAnotherTransportOnEveryRankAtOnce() throws Exception {
        long start = System.nanoTime();
        List<CompletableFuture<String>> fs = connectAll(4, rank -> io.jccl.CommunicatorConfig.fromEnvironment(),
                rank -> Map.of("JCCL_TRANSPORT", rank == 2 ? "tcp" : "auto"), Duration.ofSeconds(40),
                RendezvousErrorsTest::connected);
        for (int r = 0; r < 4; r++) {
            String m = fs.get(r).get(30, TimeUnit.SECONDS);
            assertTrue(m != null && m.contains("rank 0 has JCCL_TRANSPORT=auto, rank 2 has JCCL_TRANSPORT=tcp"),
                    "rank " + r + ": " + m);
        }
        assertTrue(System.nanoTime() - start < 20_000_000_000L, "not at once");
    }

    /**
     * A rank that could not make its communicator (JCCL_TRACE's directory not writable) did so after the connect
     * barrier: its peers returned from the rendezvous, and their first call learned only that it had closed its
     * communicator. It now makes it before the barrier, and the others' rendezvous fails with its reason.
     */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"tcp", "shm"})
    void aRankThatCannotMakeItsCommunicatorFailsTheOthersRendezvousWithItsReason(String transport,
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path notADirectory = java.nio.file.Files.writeString(dir.resolve("a-file"), "");
        List<CompletableFuture<String>> fs = connectAll(2, rank -> io.jccl.CommunicatorConfig.fromEnvironment()
                .withTrace(rank == 1 ? notADirectory.resolve("trace").toString() : null),
                rank -> Map.of("JCCL_TRANSPORT", transport), Duration.ofSeconds(20), RendezvousErrorsTest::connected);
        String cause = "cannot open the trace " + notADirectory.resolve("trace");
        String one = fs.get(1).get(30, TimeUnit.SECONDS);
        assertTrue(one.contains(cause), one);
        String zero = fs.get(0).get(30, TimeUnit.SECONDS);
        assertTrue(zero.contains("rank 1 aborted the communicator: cannot make its world communicator: " + cause),
                zero);
    }

    /**
     * Ranks on two "hosts" (two shared-memory directories): ranks 0 and 1 share memory and talk to rank 2 over TCP,
     * and rank 2, alone on its host, has their kind of transport. The paths whose transports are closed should the
     * rest of the set-up fail.
     */
    @Test
    void ranksOnTwoHostsConnectOverHybridTransports(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        java.nio.file.Path a = java.nio.file.Files.createDirectories(dir.resolve("host-a"));
        java.nio.file.Path b = java.nio.file.Files.createDirectories(dir.resolve("host-b"));
        List<CompletableFuture<String>> fs = connectAll(3,
                rank -> settings(Map.of("JCCL_SHM_DIR", (rank < 2 ? a : b).toString())), rank -> Map.of(),
                Duration.ofSeconds(20), RendezvousErrorsTest::allReduced);
        for (int r = 0; r < 3; r++) {
            String m = fs.get(r).get(30, TimeUnit.SECONDS);
            assertTrue(m.contains("+") && m.endsWith(" 3.0"), "rank " + r + ": " + m);
        }
    }

    /**
     * A rank whose shared-memory directory cannot hold its co-location probe (here: it does not exist; /dev/shm full
     * or read-only alike) saw itself as not sharing memory with itself: its host group was empty and its rendezvous
     * failed with an ArrayIndexOutOfBoundsException. It is now alone on its host and talks TCP, the others shared
     * memory among themselves.
     */
    @Test
    void aRankThatCannotWriteItsProbeConnectsOverTcp(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        java.nio.file.Path shared = java.nio.file.Files.createDirectories(dir.resolve("host-a"));
        List<CompletableFuture<String>> fs = connectAll(3,
                rank -> settings(Map.of("JCCL_SHM_DIR", (rank == 1 ? dir.resolve("missing") : shared).toString())),
                rank -> Map.of(), Duration.ofSeconds(20), RendezvousErrorsTest::allReduced);
        for (int r = 0; r < 3; r++) {
            String m = fs.get(r).get(30, TimeUnit.SECONDS);
            assertTrue(m.contains("+") && m.endsWith(" 3.0"), "rank " + r + ": " + m);
        }
    }

    /**
     * A rank whose shared-memory set-up fails (here: its segment would be over 2 GiB, as its registered region alone
     * is; a full /dev/shm alike) failed alone: its host-mates waited for its segment until the connect timeout and
     * failed naming a key of a host-local index. Every rank now fails at once with the failing rank and its reason.
     */
    @Test
    void aRankWhoseSharedMemorySetUpFailsFailsItsHostMatesAtOnceWithItsReason(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        long start = System.nanoTime();
        List<CompletableFuture<String>> fs = connectAll(3, rank -> settings(rank == 1
                ? Map.of("JCCL_SHM_DIR", dir.toString(), "JCCL_SHM_REGISTERED_BYTES", "2147479552")
                : Map.of("JCCL_SHM_DIR", dir.toString())), rank -> Map.of(), Duration.ofSeconds(40),
                RendezvousErrorsTest::connected);
        for (int r = 0; r < 3; r++) {
            String m = fs.get(r).get(50, TimeUnit.SECONDS);
            assertTrue(m != null && m.contains("rank 1: a segment of") && m.contains("over 2 GiB"), "rank " + r + ": " + m);
        }
        assertTrue(System.nanoTime() - start < 20_000_000_000L, "not at once (connect timeout 40 s)");
    }

    /**
     * The same over TCP: a rank whose TCP set-up fails (here: it cannot listen on its JCCL_BIND_ADDR) published its
     * reason, but the lower ranks, which wait for it to dial in rather than for a key of the store, waited until the
     * connect timeout and failed saying only that it "did not connect". Every rank now fails at once with its
     * reason.
     */
    @Test
    void aRankWhoseTcpSetUpFailsFailsTheRanksWaitingForItAtOnceWithItsReason() throws Exception {
        long start = System.nanoTime();
        List<CompletableFuture<String>> fs = connectAll(3,
                rank -> settings(rank == 1 ? Map.of("JCCL_BIND_ADDR", "192.0.2.1") : Map.of()),
                rank -> Map.of("JCCL_TRANSPORT", "tcp"), Duration.ofSeconds(40), RendezvousErrorsTest::connected);
        for (int r = 0; r < 3; r++) {
            String m = fs.get(r).get(50, TimeUnit.SECONDS);
            assertTrue(m != null && m.contains("rank 1: cannot listen on 192.0.2.1"), "rank " + r + ": " + m);
        }
        assertTrue(System.nanoTime() - start < 20_000_000_000L, "not at once (connect timeout 40 s)");
    }

    // ------------------------------------------------------------------ the environment

    @Test
    void shouldNameTheMissingVariable() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> LaunchEnvironment.from(Map.of("WORLD_SIZE", "4")));
        assertTrue(e.getMessage().contains("WORLD_SIZE=4") && e.getMessage().contains("set RANK"), e.getMessage());
        e = assertThrows(IllegalStateException.class, () -> LaunchEnvironment.from(Map.of("JCCL_RANK", "1")));
        assertTrue(e.getMessage().contains("JCCL_RANK=1") && e.getMessage().contains("JCCL_WORLD_SIZE"),
                e.getMessage());
    }

    @Test
    void shouldNameTheVariableThatIsNotANumber() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> LaunchEnvironment.from(Map.of("RANK", "abc", "WORLD_SIZE", "4")));
        assertTrue(e.getMessage().contains("RANK") && e.getMessage().contains("'abc'"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> LaunchEnvironment.from(Map.of("RANK", "4", "WORLD_SIZE", "4")));
        assertTrue(e.getMessage().contains("RANK=4") && e.getMessage().contains("WORLD_SIZE"), e.getMessage());
    }

    // ------------------------------------------------------------------ the store survives bad requests

    @Test
    void shouldAnswerBadStoreRequestsWithAnErrorAndKeepServing() {
        JobSecret secret = JobSecret.generate();
        try (TcpStoreServer server = TcpStoreServer.start("127.0.0.1", 0, secret);
             TcpStore client = TcpStore.connect("127.0.0.1", server.port(), secret, Duration.ofSeconds(10))) {
            client.setString("k", "v");
            client.setString("text", "not a number");
            // a timeout of 2^63-1 ms (it overflowed into an ArithmeticException that killed the connection)
            assertArrayEquals("v".getBytes(), client.get("k", Duration.ofMillis(Long.MAX_VALUE)));
            StoreException e = assertThrows(StoreException.class, () -> client.add("text", 1));
            assertTrue(e.getMessage().contains("'text'") && e.getMessage().contains("not a number"), e.getMessage());
            // the same connection still serves
            assertEquals(5, client.add("n", 5));
            assertArrayEquals("v".getBytes(), client.get("k", Duration.ofSeconds(1)));
        }
    }

    @Test
    void shouldSayWhyAHalfOpenHandshakeFailed() {
        assertEquals("it closed the connection before the handshake ended",
                io.jccl.security.Handshake.why(new java.io.EOFException()));
        assertEquals("IOException", io.jccl.security.Handshake.why(new java.io.IOException()));
    }

    /**
     * A store whose host stops answering (down, cut off, SIGSTOPped) without closing the connection: a client
     * waited for its reply forever. Now it fails once the request's own wait and the connect timeout have passed,
     * and says why; later requests on it fail at once.
     */
    @Test
    void aStoreThatStopsAnsweringFailsItsClientsInsteadOfHangingThem() throws Exception {
        JobSecret secret = JobSecret.generate();
        try (java.net.ServerSocket server = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            CompletableFuture<java.net.Socket> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    java.net.Socket s = server.accept();
                    io.jccl.security.Handshake.server(s.getInputStream(), s.getOutputStream(), secret,
                            io.jccl.security.HandshakeDescriptor.PURPOSE_STORE, 0);
                    return s; // authenticated, and then never answers
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, THREADS);
            try (TcpStore client = TcpStore.connect("127.0.0.1", server.getLocalPort(), secret,
                    Duration.ofSeconds(1))) {
                long start = System.nanoTime();
                StoreException e = assertThrows(StoreException.class, () -> client.get("k", Duration.ofSeconds(1)));
                double seconds = (System.nanoTime() - start) / 1e9;
                assertTrue(e.getMessage().contains("did not answer within"), e.getMessage());
                assertTrue(seconds < 20, seconds + " s");
                StoreException again = assertThrows(StoreException.class, () -> client.check("k"));
                assertTrue(again.getMessage().contains("did not answer within"), again.getMessage());
            } finally {
                accepted.get(10, TimeUnit.SECONDS).close();
            }
        }
    }

    /** A get that may wait "forever" on the in-process and file stores (they threw "long overflow" at once). */
    @Test
    void storesTakeTimeoutsOfForever(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        for (io.jccl.store.Store s : new io.jccl.store.Store[] {new InMemoryStore(),
                new io.jccl.store.FileStore(dir, Duration.ofSeconds(10))}) {
            s.setString("k", "v");
            assertArrayEquals("v".getBytes(), s.get("k", Duration.ofMillis(Long.MAX_VALUE)));
            assertArrayEquals("v".getBytes(), s.get("k", java.time.temporal.ChronoUnit.FOREVER.getDuration()));
        }
        // a file store takes keys over 191 bytes (its Base64 file names passed 255 bytes), and names files in lower
        // case only (Base64 names differing in case were one file on case-insensitive file systems)
        io.jccl.store.FileStore fs = new io.jccl.store.FileStore(dir.resolve("names"), Duration.ofSeconds(10));
        String longKey = "k".repeat(300);
        fs.setString(longKey, "long");
        fs.setString("00G", "upper");
        fs.setString("00a", "lower");
        assertEquals("long", new String(fs.get(longKey, Duration.ofSeconds(1))));
        assertEquals("upper", new String(fs.get("00G", Duration.ofSeconds(1))));
        assertEquals("lower", new String(fs.get("00a", Duration.ofSeconds(1))));
        try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.list(dir.resolve("names"))) {
            files.forEach(f -> assertEquals(f.getFileName().toString().toLowerCase(java.util.Locale.ROOT),
                    f.getFileName().toString()));
        }
    }

    /**
     * Init methods: a host name with an underscore (Docker Compose's service names) was "no host"; file://tmp/x was
     * taken as the directory /x on host "tmp"; MASTER_ADDR=::1 listened on 127.0.0.1 and every rank timed out.
     */
    @Test
    void initMethodsTakeWhatTheyMean() {
        InitMethod compose = InitMethod.parse("tcp://my_host:29500", Map.of(), 2);
        assertEquals("my_host", compose.host());
        assertEquals(29500, compose.port());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> InitMethod.parse("file://tmp/jccl", Map.of(), 2));
        assertTrue(e.getMessage().contains("file:///path") && e.getMessage().contains("'tmp'"), e.getMessage());
        assertEquals(java.nio.file.Path.of("/tmp/jccl"), InitMethod.parse("file://localhost/tmp/jccl", Map.of(), 2)
                .directory());
        io.jccl.JcclSettings settings = io.jccl.JcclSettings.from(Map.of(), Map.of());
        assertEquals("::1", settings.bindAddress("::1"));
        assertEquals("::1", settings.bindAddress("[::1]"));
        assertEquals("127.0.0.1", settings.bindAddress("127.0.0.1"));
        assertEquals("127.0.0.1", settings.bindAddress("localhost"));
        assertEquals("0.0.0.0", settings.bindAddress("10.0.0.1"));
    }

    /** One rank over IPv6 loopback, the store and the transport listening where the rank dials. */
    @Test
    void oneRankRendezvousesOverIpv6Loopback() throws Exception {
        boolean v6;
        try (java.net.ServerSocket s = new java.net.ServerSocket()) {
            s.bind(new java.net.InetSocketAddress("::1", 0));
            v6 = true;
        } catch (java.io.IOException e) {
            v6 = false;
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(v6 || "true".equalsIgnoreCase(System.getenv("CI")), "no IPv6 loopback here");
        int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        InitMethod init = InitMethod.parse("env://", Map.of("MASTER_ADDR", "::1", "MASTER_PORT", "" + port), 1);
        LaunchEnvironment env = LaunchEnvironment.from(Map.of("JCCL_RANK", "0", "JCCL_WORLD_SIZE", "1"));
        try (io.jccl.Communicator c = Rendezvous.connect(init, env, io.jccl.CommunicatorConfig.fromEnvironment(),
                JobSecret.generate(), Duration.ofSeconds(10))) {
            assertEquals(1, c.size());
        }
    }

    /**
     * A transport's client dialling the store's port: the server closed without a word and the client said only
     * "connection closed during the handshake (challenge)". The server now says what it serves.
     */
    @Test
    void aClientOfTheWrongPurposeIsToldWhatThePortServes() throws Exception {
        JobSecret secret = JobSecret.generate();
        try (TcpStoreServer server = TcpStoreServer.start("127.0.0.1", 0, secret);
             java.net.Socket s = new java.net.Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(10_000);
            io.jccl.security.Handshake.RefusedException e = assertThrows(
                    io.jccl.security.Handshake.RefusedException.class, () -> io.jccl.security.Handshake.client(
                            s.getInputStream(), s.getOutputStream(), secret,
                            io.jccl.security.HandshakeDescriptor.PURPOSE_TRANSPORT, 0, 2));
            assertTrue(e.getMessage().contains("this port serves the store, the client connected to a transport"),
                    e.getMessage());
        }
    }

    /**
     * A file:// directory reused after a failed start: every rank of the next job failed at once with the earlier
     * job's reason ("rank 3 never joined"), though every rank joined. Now it says the failure is older than it.
     */
    @Test
    void aFailureLeftInTheStoreByAnEarlierJobSaysSo(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        io.jccl.store.FileStore earlier = new io.jccl.store.FileStore(dir, Duration.ofSeconds(10));
        JcclException e = assertThrows(JcclException.class,
                () -> Rendezvous.join(0, 2, earlier, Duration.ofMillis(300)));
        assertTrue(e.getMessage().contains("rank 1 never joined"), e.getMessage());
        long later = System.currentTimeMillis() + 60_000; // the next job's processes start after it failed
        List<CompletableFuture<String>> fs = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            int rank = r;
            fs.add(CompletableFuture.supplyAsync(() -> {
                try {
                    Rendezvous.join(rank, 2, new io.jccl.store.FileStore(dir, Duration.ofSeconds(10)),
                            Duration.ofSeconds(5), later);
                    return "joined";
                } catch (JcclException x) {
                    return x.getMessage();
                }
            }, THREADS));
        }
        for (CompletableFuture<String> f : fs) {
            String m = f.get(30, TimeUnit.SECONDS);
            assertTrue(m.contains("written before this process started") && m.contains("must be new or empty"), m);
        }
    }
}
