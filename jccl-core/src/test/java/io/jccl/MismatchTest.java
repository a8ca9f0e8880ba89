package io.jccl;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every kind of cross-rank disagreement must make every rank raise, naming the ranks and the field, before any
 * deadline (the deadline here is long, so a hang would surface as a timeout and fail the test).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MismatchTest {
    private static final Duration LONG = Duration.ofSeconds(30);

    /**
     * Calls that agree must never be reported as a mismatch, however the ranks interleave: a regression test for a
     * waiting rank that read a peer's signature slot while the peer was rewriting it (alternating sizes, so that a
     * torn slot shows a new sequence number with an old count).
     */
    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM"})
    void agreeingCallsShouldNeverBeReportedAsMismatches(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(kind, 4, LONG, Algorithm.SHARED_MEMORY, comm -> {
            float[] big = new float[256];
            float[] tiny = new float[4];
            java.util.Random random = new java.util.Random(comm.rank());
            for (int i = 0; i < 4000; i++) {
                comm.barrier();
                if (comm.rank() == 3) { // arrive just as the others' first wait slice (1 ms) runs out
                    long until = System.nanoTime() + 950_000 + random.nextInt(100_000);
                    while (System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                }
                comm.allReduce((i & 1) == 0 ? big : tiny, ReduceOp.SUM);
            }
            return null;
        });
        for (RankHarness.Outcome<Object> o : out) {
            assertEquals(null, o.error, () -> String.valueOf(o.error));
        }
    }

    /** One rank passes messages while the others wait in shared memory: found by either side, never a hang. */
    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM"})
    void shouldReportMessagesAgainstSharedMemoryOnEveryRank(TransportKind kind) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 4, LONG, comm -> {
            comm.allReduce(Tensor.of(new float[10]), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(
                    comm.rank() == 1 ? Algorithm.RING : Algorithm.SHARED_MEMORY));
            return null;
        }), "algorithm");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportCountMismatchOnEveryRank(TransportKind kind, Algorithm algorithm) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 4, LONG, algorithm, comm -> {
            comm.allReduce(new float[comm.rank() == 2 ? 11 : 10], ReduceOp.SUM);
            return null;
        }), "count");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportDtypeMismatchOnEveryRank(TransportKind kind, Algorithm algorithm) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 4, LONG, algorithm, comm -> {
            if (comm.rank() == 3) {
                comm.allReduce(new double[10], ReduceOp.SUM);
            } else {
                comm.allReduce(new float[10], ReduceOp.SUM);
            }
            return null;
        }), "dtype");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportReduceOpMismatchOnEveryRank(TransportKind kind, Algorithm algorithm) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 3, LONG, algorithm, comm -> {
            comm.reduceScatter(Tensor.of(new int[9]), Tensor.of(new int[3]),
                    comm.rank() == 0 ? ReduceOp.MAX : ReduceOp.SUM);
            return null;
        }), "reduceOp");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportBroadcastRootMismatchOnEveryRank(TransportKind kind, Algorithm algorithm) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 4, LONG, algorithm, comm -> {
            comm.broadcast(new float[5], comm.rank() == 1 ? 1 : 0);
            comm.barrier(); // an eager broadcast's own root (rank 1 thinks it is one) returns: its next call fails
            return null;
        }), "root");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportReduceRootMismatchOnEveryRank(TransportKind kind, Algorithm algorithm) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 5, LONG, algorithm, comm -> {
            comm.reduce(Tensor.of(new float[5]), comm.rank() == 4 ? 2 : 0, ReduceOp.SUM);
            comm.barrier(); // an eager reduce's non-roots return at once: their next call fails
            return null;
        }), "root");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportGatherAndScatterRootMismatchOnEveryRank(TransportKind kind, Algorithm algorithm) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 3, LONG, algorithm, comm -> {
            int root = comm.rank() == 2 ? 2 : 0;
            comm.gather(Tensor.of(new float[2]), comm.rank() == root ? Tensor.of(new float[6]) : null, root);
            return null;
        }), "root");
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 3, LONG, algorithm, comm -> {
            int root = comm.rank() == 0 ? 1 : 0;
            comm.scatter(comm.rank() == root ? Tensor.of(new float[6]) : null, Tensor.of(new float[2]), root);
            return null;
        }), "root");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportDifferentOperationsOnEveryRank(TransportKind kind, Algorithm algorithm) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 4, LONG, algorithm, comm -> {
            if (comm.rank() == 1) {
                comm.broadcast(new float[8], 0);
            } else {
                comm.allReduce(new float[8], ReduceOp.SUM);
            }
            return null;
        }), "operation");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportASkippedCollectiveOnEveryRank(TransportKind kind, Algorithm algorithm) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 3, LONG, algorithm, comm -> {
            if (comm.rank() != 2) {
                comm.barrier();
            }
            comm.allGather(Tensor.of(new long[2]), Tensor.of(new long[6]));
            return null;
        }), "operation");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportAllGatherCountMismatchOnEveryRank(TransportKind kind, Algorithm algorithm) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 4, LONG, algorithm, comm -> {
            int c = comm.rank() == 0 ? 3 : 2;
            comm.allGather(Tensor.of(new float[c]), Tensor.of(new float[4 * c]));
            return null;
        }), "count");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportAllToAllCountMismatchOnEveryRank(TransportKind kind, Algorithm algorithm) throws Exception {
        RankHarness.assertEveryRankFails(RankHarness.run(kind, 3, LONG, algorithm, comm -> {
            int c = comm.rank() == 1 ? 6 : 3;
            comm.allToAll(Tensor.of(new float[c]), Tensor.of(new float[c]));
            return null;
        }), "count");
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldReportPointToPointTagMismatchOnTheReceiver(TransportKind kind, Algorithm algorithm) throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(kind, 2, LONG, algorithm, comm -> {
            if (comm.rank() == 0) {
                comm.send(Tensor.of(new float[3]), 1, 5);
            } else {
                comm.recv(Tensor.of(new float[3]), 0, 6);
            }
            return null;
        });
        CollectiveMismatchException m = assertInstanceOf(CollectiveMismatchException.class, out.get(1).error);
        assertEquals("tag", m.field());
        assertEquals("6", m.localValue());
        assertEquals("5", m.peerValue());
    }
}
