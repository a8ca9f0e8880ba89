package io.jccl.spark;

import io.jccl.Communicator;
import io.jccl.Tensor;
import io.jccl.CommunicatorConfig;
import io.jccl.JcclException;
import io.jccl.JcclSettings;
import io.jccl.security.JobSecret;
import io.jccl.store.InMemoryStore;
import io.jccl.transport.tcp.TcpOptions;
import io.jccl.transport.tcp.TcpTransport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rendezvous through allGather alone, with ranks that are threads and a gather of their own (no Spark). */
@Timeout(120)
class BarrierRendezvousTest {
    private static final String IDENTITY = "test stage 7 attempt 0";

    /** Runs {@code body} on {@code world} threads, each with its rank; returns what each returned or threw. */
    private static <T> List<Object> onThreads(int world, IntFunction<T> body) throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                int rank = r;
                futures.add(pool.submit(() -> body.apply(rank)));
            }
            List<Object> out = new ArrayList<>();
            for (Future<T> f : futures) {
                try {
                    out.add(f.get());
                } catch (ExecutionException e) {
                    out.add(e.getCause());
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    private static CommunicatorConfig config(Map<String, String> env) {
        return CommunicatorConfig.of(JcclSettings.from(env, Map.of()));
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm", "auto"})
    void everyRankGetsTheSameWorldAndItsCollectivesWork(String transport) throws InterruptedException {
        int world = 4;
        ThreadGather gather = new ThreadGather(world);
        List<Object> results = onThreads(world, rank -> {
            try (Communicator comm = BarrierRendezvous.connect(rank, world, IDENTITY, "127.0.0.1", transport,
                    gather.rank(rank), config(Map.of()))) {
                int[] v = {rank + 1, 10 * rank};
                comm.allReduce(v);
                byte[][] names = comm.allGatherV(("rank " + rank).getBytes(StandardCharsets.UTF_8));
                return comm.rank() + "|" + comm.size() + "|" + Arrays.toString(v) + "|"
                        + new String(names[world - 1], StandardCharsets.UTF_8) + "|" + comm.transportName();
            }
        });
        for (int r = 0; r < world; r++) {
            Object res = results.get(r);
            assertTrue(res instanceof String, () -> "rank failed: " + results);
            String[] f = ((String) res).split("\\|");
            assertEquals(Integer.toString(r), f[0]);
            assertEquals("4", f[1]);
            assertEquals("[10, 60]", f[2]);
            assertEquals("rank 3", f[3]);
            assertTrue(f[4].contains(transport.equals("tcp") ? "tcp" : "shm"), f[4]);
        }
        // round 1, then tcp: the addresses, "connected"; shm: the job id, the segments, "connected". One more
        // is allowed: a rank whose set-up is slowed between two keys by more than the 30 ms it waits for them
        // publishes them in two rounds (a loaded machine); 6-7 rounds, as before the rounds waited for activity,
        // fail.
        int most = (transport.equals("tcp") ? 3 : 4) + 1;
        assertTrue(gather.rounds() <= most, gather.rounds() + " allGather rounds, expected at most " + most);
    }

    /**
     * AUTO's parameters as programs give them, differently per rank (rank 0 one set, rank 1 none, ranks 2 and 3
     * another, chosen so that rank 0's alone choose another allgather than both the others' and the defaults'):
     * every rank takes rank 0's, as {@code Rendezvous} does, and chooses what rank 0's parameters choose. Before,
     * the given ones won, and a rank given none ran with the defaults while rank 0, given its own, sent none.
     */
    @Test
    void everyRankTakesRankZerosTuningParameters() throws InterruptedException {
        int world = 4;
        long bytes = 1024L * Float.BYTES; // the allgather's input, as algorithmFor counts it
        String latencyDear = "tcp.link.alpha_us=100000\ntcp.link.beta_us_per_byte=0.000001\n";
        String bandwidthDear = "tcp.link.alpha_us=0.001\ntcp.link.beta_us_per_byte=10\n";
        io.jccl.Algorithm defaults = new io.jccl.pipeline.AlgorithmSelector(io.jccl.pipeline.CostModel.defaults(),
                "tcp", 0, world).choose(io.jccl.OpType.ALL_GATHER, bytes);
        io.jccl.Algorithm latency = new io.jccl.pipeline.AlgorithmSelector(io.jccl.pipeline.CostModel.parse(
                latencyDear), "tcp", 0, world).choose(io.jccl.OpType.ALL_GATHER, bytes);
        io.jccl.Algorithm bandwidth = new io.jccl.pipeline.AlgorithmSelector(io.jccl.pipeline.CostModel.parse(
                bandwidthDear), "tcp", 0, world).choose(io.jccl.OpType.ALL_GATHER, bytes);
        assertNotEquals(latency, bandwidth, "the premise: they choose differently");
        // rank 0 gets the parameters whose choice differs from the defaults', ranks 2 and 3 the others
        String rank0s = latency != defaults ? latencyDear : bandwidthDear;
        String others = latency != defaults ? bandwidthDear : latencyDear;
        io.jccl.Algorithm expected = latency != defaults ? latency : bandwidth;
        assertNotEquals(defaults, expected, "the premise: rank 0's choose otherwise than the defaults");
        ThreadGather gather = new ThreadGather(world);
        List<Object> results = onThreads(world, rank -> {
            CommunicatorConfig c = config(Map.of());
            if (rank != 1) {
                c = c.withTuneParameters(rank == 0 ? rank0s : others);
            }
            try (Communicator comm = BarrierRendezvous.connect(rank, world, IDENTITY, "127.0.0.1", "tcp",
                    gather.rank(rank), c)) {
                float[] all = new float[1024 * world];
                comm.allGather(Tensor.of(new float[1024]), Tensor.of(all));
                return comm.algorithmFor(io.jccl.OpType.ALL_GATHER, io.jccl.DataType.FLOAT32, 1024).toString();
            }
        });
        for (int r = 0; r < world; r++) {
            assertEquals(expected.toString(), results.get(r), "rank " + r + " (rank 0's parameters choose "
                    + expected + ", the others' and the defaults' " + defaults + "): " + results);
        }
    }

    /** Rank 0's program gives parameters that do not parse: every rank fails after the first round, saying so. */
    @Test
    void everyRankFailsAtOnceWhereRankZerosParametersDoNotParse() throws InterruptedException {
        int world = 3;
        ThreadGather gather = new ThreadGather(world);
        long start = System.nanoTime();
        List<Object> results = onThreads(world, rank -> {
            CommunicatorConfig c = config(Map.of());
            if (rank == 0) {
                c = c.withTuneParameters("tcp.link.alpha_us=fifty\n");
            }
            try (Communicator comm = BarrierRendezvous.connect(rank, world, IDENTITY, "127.0.0.1", "tcp",
                    gather.rank(rank), c)) {
                return "connected as rank " + comm.rank();
            }
        });
        everyRankFailedAtOnceSaying(results, start, "rank 0 could not read its tuning parameters");
    }

    /** Every rank's result is a JcclException saying {@code what}, within 20 s of {@code start}. */
    private static void everyRankFailedAtOnceSaying(List<Object> results, long start, String what) {
        for (int r = 0; r < results.size(); r++) {
            Object res = results.get(r);
            assertTrue(res instanceof JcclException && ((JcclException) res).getMessage().contains(what),
                    "rank " + r + ": " + res);
        }
        assertTrue(System.nanoTime() - start < 20_000_000_000L, "not at once");
    }

    /**
     * A task given tcp among tasks given auto skipped the co-location probe and connected otherwise than its peers:
     * every task now fails after the first round, naming the task and both kinds.
     */
    @Test
    void everyRankFailsAtOnceWhereTheTasksAreGivenDifferentTransports() throws InterruptedException {
        int world = 3;
        ThreadGather gather = new ThreadGather(world);
        long start = System.nanoTime();
        List<Object> results = onThreads(world, rank -> {
            try (Communicator comm = BarrierRendezvous.connect(rank, world, IDENTITY, "127.0.0.1",
                    rank == 2 ? "tcp" : "auto", gather.rank(rank), config(Map.of()))) {
                return "connected as rank " + comm.rank();
            }
        });
        everyRankFailedAtOnceSaying(results, start, "rank 0 has auto, rank 2 has tcp");
    }

    /**
     * Two "hosts" (two shared-memory directories), two tasks each: the shared-memory part of the transport names the
     * job's ranks in its messages. It named the host's (rank 3 as 1, rank 2 as 0: tasks on the other host).
     */
    @Test
    @SuppressWarnings("try") // rank 3 closes early, as a task that left would
    void sharedMemoryMessagesNameTheJobsRanksOnSeveralHosts(@org.junit.jupiter.api.io.TempDir java.nio.file.Path a,
                                                           @org.junit.jupiter.api.io.TempDir java.nio.file.Path b)
            throws InterruptedException {
        int world = 4;
        ThreadGather gather = new ThreadGather(world);
        java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
        List<Object> results = onThreads(world, rank -> {
            Map<String, String> env = Map.of("JCCL_SHM_DIR", (rank < 2 ? a : b).toString(),
                    "JCCL_SHM_RING_BYTES", "4096");
            try (Communicator comm = BarrierRendezvous.connect(rank, world, IDENTITY, "127.0.0.1", "auto",
                    gather.rank(rank), config(env))) {
                if (rank == 3) {
                    try {
                        comm.close();
                    } finally {
                        closed.countDown();
                    }
                } else if (rank == 2) {
                    assertTrue(comm.transportName().contains("+"), comm.transportName());
                    assertTrue(closed.await(30, java.util.concurrent.TimeUnit.SECONDS), "rank 3 did not close");
                    try { // 40 KB cannot fit rank 3's 4 KiB ring, and rank 3 reads nothing any more
                        comm.send(io.jccl.Tensor.of(new float[10_000]), 3, 0);
                        return "sent";
                    } catch (RuntimeException e) {
                        StringBuilder m = new StringBuilder();
                        for (Throwable t = e; t != null; t = t.getCause()) {
                            m.append(t.getMessage()).append(" / ");
                        }
                        return m.toString();
                    }
                }
                return "ok";
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        assertTrue(results.get(2) instanceof String, () -> "rank 2: " + results);
        String m = (String) results.get(2);
        assertTrue(m.contains("rank 3 closed its communicator while rank 2 was sending"), m);
    }

    /**
     * Rank 0 reads rank 1's probe but rank 1 cannot read rank 0's (a directory shared one way: here a link in rank
     * 0's directory to rank 1's probe): rank 0 started on shared memory, waiting for rank 1's segment, rank 1 on
     * TCP, waiting for rank 0's address, and both failed at the connect timeout with "timed out waiting for key".
     * Now every rank fails once the views have come, saying that they disagree.
     */
    @Test
    void viewsSharedOneWayMakeEveryRankFailAtOnce(@org.junit.jupiter.api.io.TempDir java.nio.file.Path a,
                                                  @org.junit.jupiter.api.io.TempDir java.nio.file.Path b)
            throws Exception {
        int world = 2;
        String probe = "jccl-spark-probe-" + java.util.HexFormat.of().formatHex(io.jccl.security.JobSecret.none()
                .proof("jccl-spark probe", IDENTITY.getBytes(StandardCharsets.UTF_8)), 0, 8) + "-";
        java.nio.file.Files.createSymbolicLink(a.resolve(probe + 1), b.resolve(probe + 1));
        ThreadGather gather = new ThreadGather(world);
        long start = System.nanoTime();
        List<Object> results = onThreads(world, rank -> {
            Map<String, String> env = Map.of("JCCL_SHM_DIR", (rank == 0 ? a : b).toString(),
                    "JCCL_CONNECT_TIMEOUT_MS", "30000");
            try (Communicator comm = BarrierRendezvous.connect(rank, world, IDENTITY, "127.0.0.1", "auto",
                    gather.rank(rank), config(env))) {
                return "connected over " + comm.transportName();
            }
        });
        everyRankFailedAtOnceSaying(results, start, "views of who shares memory disagree");
        assertTrue(System.nanoTime() - start < 15_000_000_000L, "not before the connect timeout (30 s)");
    }

    @Test
    void aRankThatCannotShareMemoryMakesEveryRankFailAtOnceNamingIt() throws InterruptedException {
        int world = 3;
        ThreadGather gather = new ThreadGather(world);
        long t0 = System.nanoTime();
        List<Object> results = onThreads(world, rank -> {
            Map<String, String> env = rank == 1 ? Map.of("JCCL_SHM_DIR", "/nonexistent/jccl-spark-test") : Map.of();
            try (Communicator comm = BarrierRendezvous.connect(rank, world, IDENTITY, "127.0.0.1", "shm",
                    gather.rank(rank), config(env))) {
                return comm.rank();
            }
        });
        double seconds = (System.nanoTime() - t0) / 1e9;
        for (Object res : results) {
            assertTrue(res instanceof JcclException, () -> "expected a JcclException, got " + res);
            String m = ((Throwable) res).getMessage();
            assertTrue(m.contains("cannot be formed") && m.contains("rank 1") && m.contains("cannot see"), m);
        }
        assertTrue(seconds < 30, "the ranks took " + seconds + " s to fail (connect timeout 60 s)");
    }

    /** A set-up that failed with an exception without a message is reported by its class ("rank 0: null" before). */
    @Test
    void aSetUpFailureWithoutAMessageIsNamed() {
        java.util.concurrent.CompletableFuture<io.jccl.transport.Transport> result =
                new java.util.concurrent.CompletableFuture<>();
        result.completeExceptionally(new NullPointerException());
        String failure = BarrierRendezvous.runRounds(new ThreadGather(1).rank(0), IDENTITY, 0, 1, new GatherStore(),
                result, () -> { }, () -> null, new int[1], System.nanoTime(), Duration.ofSeconds(60));
        assertEquals("rank 0: java.lang.NullPointerException", failure);
    }

    /**
     * A set-up that never ends (here: one whose result never comes) fails every rank in the round after the connect
     * timeout and the margin; the rounds went on forever, the tasks' allGather with them.
     */
    @Test
    void theSetUpRoundsEndAfterTheConnectTimeoutAndAMargin() throws Exception {
        int world = 2;
        ThreadGather gather = new ThreadGather(world);
        Duration timeout = Duration.ofSeconds(1);
        // a set-up that started so long ago that its deadline comes in 2 s
        long started = System.nanoTime() - timeout.toNanos() - BarrierRendezvous.SETUP_MARGIN_MILLIS * 1_000_000L
                + 2_000_000_000L;
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            List<Future<String>> failures = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                int rank = r;
                failures.add(pool.submit(() -> BarrierRendezvous.runRounds(gather.rank(rank), IDENTITY, rank, world,
                        new GatherStore(), new java.util.concurrent.CompletableFuture<>(), () -> { }, () -> null,
                        new int[1], started, timeout)));
            }
            for (Future<String> f : failures) {
                String failure = f.get(20, java.util.concurrent.TimeUnit.SECONDS);
                assertTrue(failure != null && failure.startsWith("rank ")
                        && failure.contains("did not end within the connect timeout"), failure);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** A transport other than auto, tcp and shm: the task's error names the variable or the rank, and the stage. */
    @Test
    void aBadTransportNamesTheVariableAndThePartition() {
        String stage = "spark app x stage 3 attempt 0 of 4 partitions";
        IllegalArgumentException env = assertThrows(IllegalArgumentException.class,
                () -> JcclSpark.transport(Map.of("JCCL_TRANSPORT", "infiniband"), 2, stage));
        assertTrue(env.getMessage().contains("JCCL_TRANSPORT") && env.getMessage().contains("partition 2 of " + stage)
                && env.getMessage().contains("'infiniband'"), env.getMessage());
        assertEquals("auto", JcclSpark.transport(Map.of(), 2, stage));
        assertEquals("tcp", JcclSpark.transport(Map.of("JCCL_TRANSPORT", " TCP "), 2, stage));
        IllegalArgumentException arg = assertThrows(IllegalArgumentException.class, () -> BarrierRendezvous.connect(
                2, 4, stage, "127.0.0.1", "infiniband", m -> new String[4], config(Map.of())));
        assertTrue(arg.getMessage().contains("rank 2 (" + stage + ")"), arg.getMessage());
    }

    @Test
    void theSecretBelongsToOneAttempt() {
        JobSecret random = JobSecret.generate();
        String a = BarrierRendezvous.derive(random, "spark app x stage 3 attempt 0 of 4 partitions").toHex();
        String b = BarrierRendezvous.derive(random, "spark app x stage 3 attempt 1 of 4 partitions").toHex();
        assertNotEquals(a, b);
        assertEquals(a, BarrierRendezvous.derive(JobSecret.fromHex(random.toHex()),
                "spark app x stage 3 attempt 0 of 4 partitions").toHex());
        assertEquals(64, a.length());
    }

    @Test
    void aMessageOfAnotherWorldIsRefused() {
        String[] captured = new String[1];
        BarrierRendezvous.exchange(m -> {
            captured[0] = m;
            return new String[] {m};
        }, "stage 3 attempt 0", 0, 1, "x");
        JcclException e = assertThrows(JcclException.class, () -> BarrierRendezvous.exchange(
                m -> new String[] {captured[0]}, "stage 3 attempt 1", 0, 1, "x"));
        assertTrue(e.getMessage().contains("not this world"), e.getMessage());
        JcclException twice = assertThrows(JcclException.class, () -> BarrierRendezvous.exchange(
                m -> new String[] {captured[0], captured[0]}, "stage 3 attempt 0", 0, 2, "x"));
        assertTrue(twice.getMessage().contains("from rank 0"), twice.getMessage());
    }

    /**
     * A survivor of attempt 0 that reaches a listener of attempt 1 (a reused port, a late dial) is refused: the
     * two attempts' secrets differ, so the handshake fails and the attempt-1 rank never counts it as a peer.
     */
    @Test
    void ranksOfTwoAttemptsCannotConnect() throws InterruptedException {
        JobSecret random = JobSecret.generate();
        InMemoryStore store = new InMemoryStore();
        List<Object> results = onThreads(2, rank -> {
            JobSecret s = BarrierRendezvous.derive(random, "stage 3 attempt " + rank);
            TcpOptions opts = TcpOptions.loopback(s).withConnectTimeout(Duration.ofSeconds(3));
            try (TcpTransport t = TcpTransport.connect(rank, 2, store, opts)) {
                return t.name();
            }
        });
        for (Object res : results) {
            assertTrue(res instanceof JcclException, () -> "expected a refused connection, got " + res);
        }
        assertTrue(((Throwable) results.get(1)).getMessage().contains("refused"),
                ((Throwable) results.get(1)).getMessage());
    }
}
