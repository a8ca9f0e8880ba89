package io.jccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a team coming from torch.distributed reaches for first: {@code initProcessGroup} with its three init
 * methods, {@code newGroup}, {@code isend}/{@code irecv} and their batches, allgather/gather of byte arrays of
 * different lengths, SUM as the default op, plain-array overloads, and errors numbered by the user's calls.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FirstHourApiTest {

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Every rank of {@code world} calls {@code init} on its own thread; the communicators in rank order. */
    private static List<Communicator> initAll(int world, java.util.function.IntFunction<Communicator> init)
            throws Exception {
        List<CompletableFuture<Communicator>> fs = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            int rank = r;
            fs.add(CompletableFuture.supplyAsync(() -> init.apply(rank),
                    t -> new Thread(t, "init-rank-" + rank).start()));
        }
        List<Communicator> out = new ArrayList<>();
        for (CompletableFuture<Communicator> f : fs) {
            out.add(f.get(60, TimeUnit.SECONDS));
        }
        return out;
    }

    /** Runs {@code body} on every communicator at once; closes them after. */
    private static <T> List<T> onEach(List<Communicator> comms, Jccl.RankBody<T> body) throws Exception {
        List<CompletableFuture<T>> fs = new ArrayList<>();
        for (Communicator c : comms) {
            fs.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return body.run(c);
                } catch (Exception e) {
                    throw new java.util.concurrent.CompletionException(e);
                }
            }, t -> new Thread(t, "rank-" + c.rank()).start()));
        }
        try {
            List<T> out = new ArrayList<>();
            for (CompletableFuture<T> f : fs) {
                out.add(f.get(60, TimeUnit.SECONDS));
            }
            return out;
        } finally {
            for (Communicator c : comms) {
                c.close();
            }
        }
    }

    private static float[] sumOfRanks(Communicator c) {
        float[] x = {c.rank(), 1};
        c.allReduce(x);
        return x;
    }

    @Test
    void initProcessGroupOverTcpMeetsAtTheGivenAddress() throws Exception {
        String url = "tcp://127.0.0.1:" + freePort();
        List<Communicator> comms = initAll(3, r -> Jccl.initProcessGroup(ProcessGroupOptions.of(url).withRank(r)
                .withWorldSize(3).withTransport("tcp").withTimeout(Duration.ofSeconds(30))));
        for (float[] x : onEach(comms, FirstHourApiTest::sumOfRanks)) {
            assertArrayEquals(new float[] {3, 3}, x);
        }
    }

    @Test
    void initProcessGroupThroughADirectoryLeavesItEmptyForTheNextJob(@TempDir Path dir) throws Exception {
        Path store = dir.resolve("store");
        String url = "file://" + store;
        for (int job = 0; job < 2; job++) { // the second job finds the directory as the first left it
            List<Communicator> comms = initAll(3, r -> Jccl.initProcessGroup(url, r, 3));
            for (float[] x : onEach(comms, FirstHourApiTest::sumOfRanks)) {
                assertArrayEquals(new float[] {3, 3}, x);
            }
            try (var files = Files.list(store)) {
                assertEquals(0, files.count(), "rank 0 empties the store once every rank is connected");
            }
        }
    }

    @Test
    void initProcessGroupRefusesWhatItCannotUse() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Jccl.initProcessGroup(ProcessGroupOptions.of("tcp://127.0.0.1:29500")));
        assertTrue(e.getMessage().contains("rank must be given") || e.getMessage().contains("the rank"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Jccl.initProcessGroup("udp://x:1", 0, 2));
        assertTrue(e.getMessage().contains("unknown scheme"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Jccl.initProcessGroup("tcp://host-without-port", 0, 2));
        assertTrue(e.getMessage().contains("host and a port"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Jccl.initProcessGroup("tcp://127.0.0.1:1", 2, 2));
        assertTrue(e.getMessage().contains("rank 2 is not a rank of a world of 2"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ProcessGroupOptions.of("env://").withTransport("udp"));
        assertThrows(IllegalArgumentException.class, () -> ProcessGroupOptions.of("env://").withSecret("xyz"));
    }

    @Test
    void envInitNeverFallsBackToADefaultMaster() {
        CommunicatorConfig config = JcclSettings.from(Map.of("RANK", "1", "WORLD_SIZE", "2"), Map.of())
                .communicatorConfig();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> Jccl.initProcessGroup(ProcessGroupOptions.of("env://").withConfig(config)));
        assertTrue(e.getMessage().contains("MASTER_ADDR") && e.getMessage().contains("MASTER_PORT"), e.getMessage());
        IllegalStateException f = assertThrows(IllegalStateException.class, () -> Jccl.fromEnvironment(config));
        assertTrue(f.getMessage().contains("MASTER_ADDR"), f.getMessage());
    }

    @Test
    void theUsersFirstCallIsNumberedZeroInAProcessJob() throws Exception {
        String url = "tcp://127.0.0.1:" + freePort();
        List<Communicator> comms = initAll(2, r -> Jccl.initProcessGroup(url, r, 2));
        List<String> messages = onEach(comms, c -> {
            // rank 1 disagrees on the count of the first call it makes
            CollectiveMismatchException e = assertThrows(CollectiveMismatchException.class,
                    () -> c.allReduce(new float[c.rank() == 0 ? 4 : 5]));
            return e.getMessage();
        });
        for (String m : messages) {
            assertTrue(m.contains("#0"), "the rendezvous's barrier is not counted: " + m);
        }
    }

    @Test
    void newGroupRanksItsMembersInIncreasingOrder() {
        List<float[]> got = Jccl.runThreads(4, c -> {
            Communicator g = c.newGroup(3, 1);
            if (c.rank() == 0 || c.rank() == 2) {
                assertNull(g);
                return null;
            }
            try (g) {
                assertEquals(2, g.size());
                assertEquals(c.rank() == 1 ? 0 : 1, g.rank());
                float[] x = {c.rank()};
                g.allReduce(x);
                return x;
            }
        });
        assertArrayEquals(new float[] {4}, got.get(1));
        assertArrayEquals(new float[] {4}, got.get(3));
    }

    @Test
    void newGroupWithListsThatDifferFailsOnEveryRankNamingOne() {
        List<String> messages = Jccl.runThreads(3, c -> {
            JcclException e = assertThrows(JcclException.class, () -> c.newGroup(c.rank() == 2 ? new int[] {0, 2}
                    : new int[] {0, 1}));
            c.barrier(); // the communicator stays usable
            return e.getMessage();
        });
        for (String m : messages) {
            assertTrue(m.contains("rank 2 passed other ranks than ranks [0, 1]"), m);
        }
        assertThrows(JcclException.class, () -> Jccl.runThreads(2, c -> c.newGroup(0, 0)));
        assertThrows(JcclException.class, () -> Jccl.runThreads(2, c -> c.newGroup(0, 2)));
    }

    /**
     * Lists whose weak digest (Arrays.hashCode) collided, [0, 33] and [1, 2], passed as the same list: ranks 0, 1, 2
     * and 33 formed one group of four where each expected two, a silently wrong group. Every rank now fails.
     */
    @Test
    void newGroupWithListsThatDifferButOnceHashedAlikeFailsOnEveryRank() {
        assertEquals(java.util.Arrays.hashCode(new int[] {0, 33}), java.util.Arrays.hashCode(new int[] {1, 2}),
                "the premise");
        List<String> messages = Jccl.runThreads(34, c -> {
            int[] list = c.rank() == 1 || c.rank() == 2 ? new int[] {1, 2} : new int[] {0, 33};
            JcclException e = assertThrows(JcclException.class, () -> c.newGroup(list));
            return e.getMessage();
        });
        for (String m : messages) {
            assertTrue(m.contains("ranks [1, 2] passed other ranks than the 32 ranks [0, 3, 4, 5, 6, 7, 8, 9, ...]"),
                    m);
        }
    }

    /**
     * Rank 0's list the one that differs: every rank said "rank 1 passed other ranks than rank 0", blaming a rank
     * that passed what every other rank did. The ranks whose list differs from most ranks' are named.
     */
    @Test
    void newGroupWithListsThatDifferNamesTheRanksWhoseListDiffersFromMost() {
        List<String> messages = Jccl.runThreads(4, c -> {
            JcclException e = assertThrows(JcclException.class, () -> c.newGroup(c.rank() == 0 ? new int[] {0, 3}
                    : new int[] {0, 1}));
            return e.getMessage();
        });
        for (String m : messages) {
            assertTrue(m.contains("rank 0 passed other ranks than ranks [1, 2, 3]"), m);
        }
        // three lists: the ranks of the lists fewer ranks passed
        messages = Jccl.runThreads(4, c -> {
            JcclException e = assertThrows(JcclException.class, () -> c.newGroup(c.rank() == 1 ? new int[] {1}
                    : c.rank() == 3 ? new int[] {3} : new int[] {0, 2}));
            return e.getMessage();
        });
        for (String m : messages) {
            assertTrue(m.contains("ranks [1, 3] passed other ranks than ranks [0, 2]"), m);
        }
    }

    /**
     * A bad list or color on one rank failed that rank alone, before the exchange, and the others waited in it until
     * their deadline: every rank now fails at once, naming the rank.
     */
    @Test
    void aBadGroupOnOneRankFailsEveryRankAtOnceNamingIt() {
        long start = System.nanoTime();
        List<String> messages = Jccl.runThreads(3, c -> {
            String a = assertThrows(IllegalArgumentException.class,
                    () -> c.newGroup(c.rank() == 1 ? new int[] {0, 3} : new int[] {0, 1})).getMessage();
            String b = assertThrows(IllegalArgumentException.class,
                    () -> c.split(c.rank() == 2 ? -7 : 0, 0)).getMessage();
            c.barrier(); // the communicator stays usable
            return a + " | " + b;
        });
        for (int r = 0; r < 3; r++) {
            String m = messages.get(r);
            assertTrue(m.contains((r == 1 ? "this rank (1)" : "rank 1") + " passed rank 3, not a rank of this "
                    + "communicator of 3"), m);
            assertTrue(m.contains((r == 2 ? "this rank (2) gave -7" : "rank 2 gave -7")), m);
        }
        assertTrue(System.nanoTime() - start < 20_000_000_000L, "not at once");
    }

    /** Each rank's value, or the rank's failure rethrown. */
    private static <T> List<T> values(List<RankHarness.Outcome<T>> outcomes) {
        List<T> out = new ArrayList<>();
        for (RankHarness.Outcome<T> o : outcomes) {
            if (o.error != null) {
                throw new AssertionError(o.error);
            }
            out.add(o.value);
        }
        return out;
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(TransportKind.class)
    void aBatchOfSendsAndReceivesCompletesInAnyOrder(TransportKind kind) throws Exception {
        int n = 300_000; // larger than a shared-memory ring: sends wait for room while receives are queued
        List<float[]> got = values(RankHarness.run(kind, 4, Duration.ofSeconds(30), c -> {
            int p = c.size();
            int r = c.rank();
            float[] fromLeft = new float[n];
            float[] fromRight = new float[n];
            float[] mine = new float[n];
            Arrays.fill(mine, r);
            // every rank lists its receives first: with blocking receives this would deadlock
            List<Work> works = c.batchIsendIrecv(List.of(
                    P2POp.irecv(Tensor.of(fromLeft), (r - 1 + p) % p, 7),
                    P2POp.irecv(Tensor.of(fromRight), (r + 1) % p, 7),
                    P2POp.isend(Tensor.of(mine), (r + 1) % p, 7),
                    P2POp.isend(Tensor.of(mine), (r - 1 + p) % p, 7)));
            for (Work w : works) {
                w.await();
            }
            return new float[] {fromLeft[n - 1], fromRight[0]};
        }));
        for (int r = 0; r < 4; r++) {
            assertArrayEquals(new float[] {(r + 3) % 4, (r + 1) % 4}, got.get(r), kind + " rank " + r);
        }
    }

    @Test
    void synchronousSendsQueueBehindPendingAsynchronousOnes() {
        List<int[]> got = Jccl.runThreads(2, c -> {
            if (c.rank() == 0) {
                int[] big = new int[1 << 20];
                Arrays.fill(big, 1);
                Work w = c.isend(Tensor.of(big), 1, 0);
                c.send(Tensor.of(new int[] {2}), 1, 0); // must arrive after the isend's message
                w.await();
                return null;
            }
            int[] first = new int[1 << 20];
            int[] second = new int[1];
            Work a = c.irecv(Tensor.of(first), 0, 0);
            c.recv(Tensor.of(second), 0, 0);
            a.await();
            return new int[] {first[0], first[(1 << 20) - 1], second[0]};
        });
        assertArrayEquals(new int[] {1, 1, 2}, got.get(1));
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(TransportKind.class)
    void allGatherVAndGatherVCarryArraysOfAnyLength(TransportKind kind) throws Exception {
        List<byte[][]> got = values(RankHarness.run(kind, 4, Duration.ofSeconds(30), c -> {
            byte[] mine = new byte[c.rank() == 2 ? 0 : 100_000 * c.rank() + 3]; // one rank has nothing
            for (int i = 0; i < mine.length; i++) {
                mine[i] = (byte) (c.rank() * 31 + i);
            }
            byte[][] all = c.allGatherV(mine);
            byte[][] atRoot = c.gatherV(mine, 1);
            assertEquals(c.rank() == 1, atRoot != null);
            if (atRoot != null) {
                for (int r = 0; r < 4; r++) {
                    assertArrayEquals(all[r], atRoot[r], "gatherV block " + r);
                }
            }
            return all;
        }));
        for (byte[][] all : got) {
            for (int r = 0; r < 4; r++) {
                assertEquals(r == 2 ? 0 : 100_000 * r + 3, all[r].length);
                for (int i = 0; i < all[r].length; i += 997) {
                    assertEquals((byte) (r * 31 + i), all[r][i]);
                }
            }
        }
    }

    /**
     * The allgathers jccl makes for itself pair only with their own kind: a user's allGather of two ints on one rank
     * against allGatherV's exchange of lengths (two ints a rank) on the other, or against split's exchange of colours
     * and keys, fails every rank with a mismatch in "exchange", naming the peer. The allGatherV took rank 1's ints as
     * lengths (a negative one failed in its second call; any other was read as the length of an array rank 1 never
     * sent), and a split took them as a colour and a key, without an error.
     */
    @Test
    void jcclsOwnExchangesDoNotPairWithAUsersAllGather() throws Exception {
        for (int variant = 0; variant < 2; variant++) {
            int v = variant;
            List<RankHarness.Outcome<Object>> out = RankHarness.run(2, Duration.ofSeconds(20), comm -> {
                if (comm.rank() == 1) {
                    comm.allGather(Tensor.of(new int[] {5, 0}), Tensor.of(new int[4]));
                } else if (v == 0) {
                    comm.allGatherV(new byte[3]);
                } else {
                    comm.split(0, 0).close();
                }
                return null;
            });
            RankHarness.assertEveryRankFails(out, "exchange");
        }
    }

    /**
     * A gatherV whose root is out of range, or differs, on one rank, or an allGatherV of null data on one rank, fails
     * on every rank at once naming that rank, and the communicator goes on: the rank refused alone before the
     * exchange of lengths, and its peers waited in it until their deadline.
     */
    @Test
    void aBadRootOrNullDataOnOneRankFailsTheVariableCallsOnEveryRank() {
        List<String> messages = Jccl.runThreads(3, c -> {
            StringBuilder all = new StringBuilder();
            all.append(assertThrows(IllegalArgumentException.class,
                    () -> c.gatherV(new byte[2], c.rank() == 2 ? 3 : 0)).getMessage()).append('\n');
            all.append(assertThrows(IllegalArgumentException.class,
                    () -> c.gatherV(new byte[2], c.rank() == 1 ? 2 : 0)).getMessage()).append('\n');
            all.append(assertThrows(IllegalArgumentException.class,
                    () -> c.allGatherV(c.rank() == 1 ? null : new byte[1])).getMessage()).append('\n');
            byte[][] ok = c.allGatherV(new byte[] {(byte) c.rank()}); // the communicator goes on
            all.append(ok[2][0]);
            return all.toString();
        });
        for (int r = 0; r < 3; r++) {
            String[] m = messages.get(r).split("\n");
            assertTrue(m[0].startsWith("rank " + r + ": gatherV refused on every rank: rank 2 named root 3, not in "
                    + "[0, 3)"), m[0]);
            assertTrue(m[1].contains("rank 1 named root 2 where rank 0 named 0"), m[1]);
            assertTrue(m[2].contains("allGatherV refused on every rank: rank 1 passed null data"), m[2]);
            assertEquals("2", m[3]);
        }
    }

    @Test
    void sumIsTheDefaultAndPlainArraysNeedNoTensor() {
        Jccl.run(3, c -> {
            int[] i = {c.rank(), 1};
            c.allReduce(i);
            assertArrayEquals(new int[] {3, 3}, i);
            long[] l = {1L << 40};
            c.allReduce(l, ReduceOp.MAX);
            assertArrayEquals(new long[] {1L << 40}, l);
            byte[] b = {(byte) (200 + c.rank())};
            c.allReduce(b, DataType.UINT8, ReduceOp.MIN);
            assertEquals(200, b[0] & 0xFF);
            short[] h = {io.jccl.reduce.HalfFloats.floatToHalf(1.5f)};
            c.allReduce(h, DataType.FLOAT16, ReduceOp.SUM);
            assertEquals(4.5f, io.jccl.reduce.HalfFloats.halfToFloat(h[0]));
            double[] d = {c.rank()};
            c.allReduceAsync(d, ReduceOp.SUM).await();
            assertArrayEquals(new double[] {3}, d);
            long[] root = {c.rank() == 2 ? 42 : 0};
            c.broadcastAsync(root, 2).await();
            assertArrayEquals(new long[] {42}, root);
            float[] in = new float[3];
            Arrays.fill(in, c.rank() + 1);
            float[] out = new float[1];
            c.reduceScatter(Tensor.of(in), Tensor.of(out));
            assertArrayEquals(new float[] {6}, out);
            float[] t = {1};
            c.reduce(Tensor.of(t), 0);
            assertEquals(c.rank() == 0 ? 3f : 1f, t[0]);
        });
    }

    @Test
    void tensorsAndCountersSayWhatTheyHold() {
        assertEquals("Tensor[FLOAT32 x 3, float[4] at 1: 2.0, 3.0, 4.0]",
                Tensor.of(new float[] {1, 2, 3, 4}, 1, 3).toString());
        assertEquals("Tensor[UINT8 x 2, byte[2] at 0: 255, 1]",
                Tensor.of(new byte[] {(byte) 255, 1}, DataType.UINT8).toString());
        assertTrue(Tensor.of(new int[20]).toString().endsWith(", 0, ...]"));
        List<String> counters = Jccl.runThreads(2, c -> {
            c.allReduce(new float[] {1, 2});
            return c.counters().toString();
        });
        assertTrue(counters.get(0).startsWith("TrafficCounters[allReduce: 1 call, "), counters.get(0));
        assertEquals("TrafficCounters[]", new io.jccl.instrument.TrafficCounters().toString());
    }
}
