package io.jccl;

import io.jccl.buffer.Buf;
import io.jccl.reference.ReferenceModel;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The shared-memory reduce (issue 16): eager up to 16 KiB (the non-roots publish and return; the root waits for
 * everyone), in rounds above, with the reduction work shared. The root's result must be the rank-order model's bit
 * for bit, every other rank's buffer must be left as it was, non-roots running ahead must never change what a root
 * still reads, and each rooted disagreement fails every rank, at the latest at its next call.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SharedMemoryReduceTest {
    private static final Duration LONG = Duration.ofSeconds(20);
    private static final CollectiveOptions SHARED = CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.SHARED_MEMORY);
    /**
     * Empty, one element, fewer than ranks, eager, below 16 KiB but above the tests' 8 KiB exchange buffers (in
     * rounds), just above 16 KiB, several exchange buffers.
     */
    private static final int[] COUNTS = {0, 1, 3, 1001, 3001, 4097, 70_001};

    private static float[] input(int rank, int count, int root) {
        Random rnd = new Random(rank * 7_919L + count * 31L + root);
        float[] x = new float[count];
        for (int i = 0; i < count; i++) {
            x[i] = (float) (rnd.nextGaussian() * Math.pow(2, rnd.nextInt(24) - 12)); // sums round in every order
        }
        return x;
    }

    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM"})
    void theRootShouldGetTheRankOrderResultAndTheOthersKeepTheirInput(TransportKind kind) throws Exception {
        int world = 3;
        List<RankHarness.Outcome<List<float[]>>> out = RankHarness.run(kind, world, LONG, comm -> {
            List<float[]> results = new ArrayList<>();
            for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX}) {
                for (int count : COUNTS) {
                    for (int root = 0; root < world; root++) {
                        float[] x = input(comm.rank(), count, root);
                        comm.reduce(Tensor.of(x), root, op, SHARED);
                        results.add(x);
                    }
                }
            }
            return results;
        });
        for (RankHarness.Outcome<List<float[]>> o : out) {
            assertNull(o.error, () -> String.valueOf(o.error));
        }
        int i = 0;
        for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MAX}) {
            for (int count : COUNTS) {
                for (int root = 0; root < world; root++) {
                    List<Buf> inputs = new ArrayList<>();
                    for (int r = 0; r < world; r++) {
                        inputs.add(new Buf(DataType.FLOAT32, input(r, count, root), 0, count));
                    }
                    float[] expected = (float[]) ReferenceModel.allReduceInRankOrder(inputs, op).array();
                    for (int r = 0; r < world; r++) {
                        String what = op + " of " + count + " to root " + root + ", rank " + r;
                        assertArrayEquals(r == root ? expected : input(r, count, root), out.get(r).value.get(i),
                                what);
                    }
                    i++;
                }
            }
        }
    }

    /**
     * Non-roots that return at once run ahead of the roots: what a root still reads must stay (buffers alternate);
     * and where ranks read each other's buffers in place, none may change its buffer while a peer still reads it.
     */
    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM"})
    void shouldReduceEveryCallWhileNonRootsRunAhead(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(kind, 4, LONG, comm -> {
            Random random = new Random(comm.rank());
            float[] wrong = {0};
            for (int i = 0; i < 3000; i++) {
                int root = i % comm.size();
                // small ones (eager), and every tenth above 16 KiB: in rounds over shm, read in place over threads
                float[] x = new float[i % 10 == 0 ? 5000 : 1 + i % 7];
                java.util.Arrays.fill(x, i * 10 + comm.rank());
                if (comm.rank() == root && random.nextInt(50) == 0) {
                    Thread.sleep(1); // a slow root: the non-roots of the next calls get ahead of it
                }
                comm.reduce(Tensor.of(x), root, ReduceOp.SUM, SHARED);
                for (float v : x) {
                    if (v != (comm.rank() == root ? 4 * i * 10 + 6 : i * 10 + comm.rank())) {
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

    /** Ranks 0-2 reduce to rank 0; rank 3 takes itself for the root. */
    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM"})
    void aRankThatTakesItselfForTheRootShouldFailEveryRank(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(kind, 4, LONG, comm -> {
            float[] x = {comm.rank()};
            comm.reduce(Tensor.of(x), comm.rank() == 3 ? 3 : 0, ReduceOp.SUM, SHARED);
            comm.barrier(); // a non-root that returned finds the difference here
            return x;
        });
        RankHarness.assertEveryRankFails(out, "root");
        for (RankHarness.Outcome<float[]> o : out) {
            if (o.error instanceof CollectiveMismatchException) {
                CollectiveMismatchException m = (CollectiveMismatchException) o.error;
                assertEquals(OpType.REDUCE, m.operation(), m.getMessage());
            }
        }
    }

    /** The root reduces 6 elements, the others 5: the root fails at once, the others at their next call. */
    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM"})
    void aCountThatDiffersFromTheRootsShouldFailEveryRank(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(kind, 4, LONG, comm -> {
            float[] x = new float[comm.rank() == 1 ? 6 : 5];
            comm.reduce(Tensor.of(x), 1, ReduceOp.SUM, SHARED);
            comm.barrier();
            return x;
        });
        RankHarness.assertEveryRankFails(out, "count");
        CollectiveMismatchException m = assertInstanceOf(CollectiveMismatchException.class, out.get(1).error);
        assertEquals(OpType.REDUCE, m.operation(), m.getMessage());
    }
}
