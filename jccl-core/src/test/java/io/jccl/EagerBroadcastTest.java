package io.jccl;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The eager shared-memory broadcast (issue 16): a broadcast that fits one exchange buffer lets its root return
 * without waiting; the other ranks wait for the root alone. The binomial tree over messages defers its agreement
 * the same way (its ranks compare their neighbours' signatures only, then run the tree), so its rooted cases are
 * here too, over threads and TCP. The root's early return must never cost a result or a
 * mismatch: each rooted disagreement fails every rank, at the latest at the call after, and no rank that returned
 * normally holds anything but the root's data.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EagerBroadcastTest {
    private static final Duration LONG = Duration.ofSeconds(20);
    private static final CollectiveOptions SHARED = CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.SHARED_MEMORY);

    /**
     * The eager shared-memory broadcast, and the binomial tree over messages, whose root also sends and may return
     * before it hears of a disagreement (only its neighbours' signatures are compared before the tree).
     */
    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> rootsThatReturnEarly() {
        return java.util.stream.Stream.of(
                org.junit.jupiter.params.provider.Arguments.of(TransportKind.LOCAL, Algorithm.SHARED_MEMORY),
                org.junit.jupiter.params.provider.Arguments.of(TransportKind.SHM, Algorithm.SHARED_MEMORY),
                org.junit.jupiter.params.provider.Arguments.of(TransportKind.LOCAL, Algorithm.TREE),
                org.junit.jupiter.params.provider.Arguments.of(TransportKind.TCP, Algorithm.TREE));
    }

    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM"})
    void theRootShouldNotWaitForTheOthers(TransportKind kind) throws Exception {
        CountDownLatch rootReturned = new CountDownLatch(1);
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(kind, 4, LONG, comm -> {
            float[] x = {comm.rank() == 2 ? 42 : -1, comm.rank()};
            if (comm.rank() != 2 && !rootReturned.await(20, TimeUnit.SECONDS)) { // a root that waited: deadlock
                throw new AssertionError("the root did not return before the others arrived");
            }
            comm.broadcast(Tensor.of(x), 2, SHARED);
            if (comm.rank() == 2) {
                rootReturned.countDown();
            }
            comm.barrier(); // the deferred check of the broadcast's signatures: they agree
            return x;
        });
        for (RankHarness.Outcome<float[]> o : out) {
            assertNull(o.error, () -> String.valueOf(o.error));
            assertArrayEquals(new float[] {42, 2}, o.value);
        }
    }

    /** Roots that run ahead of slow ranks must not overwrite what those still read (two buffers alternate). */
    @ParameterizedTest
    @MethodSource("rootsThatReturnEarly")
    void shouldDeliverEveryRootsDataWhileRootsRunAhead(TransportKind kind, Algorithm algorithm) throws Exception {
        CollectiveOptions options = CollectiveOptions.DEFAULT.withAlgorithm(algorithm);
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(kind, 4, LONG, comm -> {
            java.util.Random random = new java.util.Random(comm.rank());
            float[] wrong = {0};
            for (int i = 0; i < 3000; i++) {
                int root = i % comm.size();
                float[] x = new float[1 + i % 7];
                java.util.Arrays.fill(x, comm.rank() == root ? i * 10 + root : -1);
                if (comm.rank() == 3 && random.nextInt(50) == 0) {
                    Thread.sleep(1); // a slow rank: the roots of the next calls get ahead of it
                }
                comm.broadcast(Tensor.of(x), root, options);
                for (float v : x) {
                    if (v != i * 10 + root) {
                        wrong[0]++;
                    }
                }
                if (i % 100 == 99) {
                    comm.allReduce(Tensor.of(wrong), ReduceOp.SUM);
                    if (wrong[0] != 0) {
                        throw new AssertionError(wrong[0] + " wrong elements by call " + i);
                    }
                }
            }
            return wrong;
        });
        for (RankHarness.Outcome<float[]> o : out) {
            assertNull(o.error, () -> String.valueOf(o.error));
        }
    }

    /** Ranks 0-2 broadcast from rank 0; rank 3 takes itself for the root and returns at once. */
    @ParameterizedTest
    @MethodSource("rootsThatReturnEarly")
    void aRankThatTakesItselfForTheRootShouldFailAtItsNextCall(TransportKind kind, Algorithm algorithm) throws Exception {
        CollectiveOptions options = CollectiveOptions.DEFAULT.withAlgorithm(algorithm);
        float[][] results = new float[4][];
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(kind, 4, LONG, comm -> {
            float[] x = {comm.rank() == 0 ? 7 : comm.rank() == 3 ? 9 : -1};
            comm.broadcast(Tensor.of(x), comm.rank() == 3 ? 3 : 0, options);
            results[comm.rank()] = x.clone(); // what this rank's broadcast left, if it returned
            comm.barrier();
            return x;
        });
        RankHarness.assertEveryRankFails(out, "root");
        for (int r = 1; r <= 2; r++) {
            if (results[r] != null) {
                assertArrayEquals(new float[] {7}, results[r], "rank " + r + " got another root's data");
            }
        }
    }

    /** Rank 2 expects the data of rank 1, which is not a root: it must fail before it reads anything. */
    @ParameterizedTest
    @MethodSource("rootsThatReturnEarly")
    void aRankThatNamesAnotherRootShouldFailAtOnceWithItsBufferUntouched(TransportKind kind, Algorithm algorithm) throws Exception {
        CollectiveOptions options = CollectiveOptions.DEFAULT.withAlgorithm(algorithm);
        float[][] left = new float[4][];
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(kind, 4, LONG, comm -> {
            float[] x = {comm.rank() == 0 ? 7 : -comm.rank()};
            left[comm.rank()] = x;
            comm.broadcast(Tensor.of(x), comm.rank() == 2 ? 1 : 0, options);
            comm.barrier();
            return x;
        });
        RankHarness.assertEveryRankFails(out, "root");
        // Rank 2 fails inside its broadcast: by its own comparison, or by the abort of a rank that compared first
        // (rank 0 may reach its next call and find rank 2's signature while rank 2 still waits to be scheduled).
        JcclException m = assertInstanceOf(JcclException.class, out.get(2).error);
        assertEquals(OpType.BROADCAST, m.operation(), m.getMessage());
        assertTrue(m instanceof CollectiveMismatchException ? ((CollectiveMismatchException) m).field().equals("root")
                : m instanceof PeerAbortedException && ((PeerAbortedException) m).reason().contains("root"),
                m.getMessage());
        assertArrayEquals(new float[] {-2}, left[2], "rank 2 read a buffer that is not a root's");
    }

    /** The root broadcasts 6 elements, the others expect 5: each non-root fails at once, the root at its next call. */
    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM"})
    void aCountThatDiffersFromTheRootsShouldFailEveryRank(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(kind, 4, LONG, comm -> {
            float[] x = new float[comm.rank() == 1 ? 6 : 5];
            comm.broadcast(Tensor.of(x), 1, SHARED);
            comm.barrier();
            return x;
        });
        RankHarness.assertEveryRankFails(out, "count");
        for (int r : new int[] {0, 2, 3}) {
            CollectiveMismatchException m = assertInstanceOf(CollectiveMismatchException.class, out.get(r).error,
                    "rank " + r + " should find the difference itself");
            assertEquals(OpType.BROADCAST, m.operation(), m.getMessage());
            assertEquals(1, m.peer(), m.getMessage());
        }
    }
}
