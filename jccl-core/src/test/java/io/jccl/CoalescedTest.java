package io.jccl;

import io.jccl.buffer.Buf;
import io.jccl.buffer.Bufs;
import io.jccl.reference.InputGenerator;
import io.jccl.reference.ReferenceModel;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A coalesced allreduce equals, bit for bit, the allreduce of the concatenation. */
class CoalescedTest {

    @Test
    void shouldEqualTheAllReduceOfTheConcatenation() {
        int world = 3;
        int[] sizes = {5, 0, 1024, 7, 333};
        int total = 0;
        for (int s : sizes) {
            total += s;
        }
        List<Buf> flats = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            flats.add(InputGenerator.generate(DataType.FLOAT32, ReduceOp.SUM, total, 5, r));
        }
        Buf expected = ReferenceModel.allReduce(flats, ReduceOp.AVG);
        List<Boolean> ok = Jccl.runThreads(world, CommunicatorConfig.fromEnvironment().withAlgorithm(Algorithm.RING),
                comm -> {
            Buf mine = flats.get(comm.rank());
            List<Tensor> parts = new ArrayList<>();
            List<float[]> arrays = new ArrayList<>();
            int at = 0;
            for (int s : sizes) {
                float[] a = new float[s];
                System.arraycopy(mine.array(), at, a, 0, s);
                arrays.add(a);
                parts.add(Tensor.of(a));
                at += s;
            }
            comm.allReduceCoalesced(parts, ReduceOp.AVG);
            float[] joined = new float[mine.count()];
            at = 0;
            for (float[] a : arrays) {
                System.arraycopy(a, 0, joined, at, a.length);
                at += a.length;
            }
            assertThrows(IllegalArgumentException.class,
                    () -> comm.allReduceCoalesced(List.of(Tensor.of(new float[1]), Tensor.of(new double[1])),
                            ReduceOp.SUM));
            return Bufs.bitEqual(new Buf(DataType.FLOAT32, joined, 0, joined.length), expected);
        });
        ok.forEach(b -> assertTrue(b));
    }

    /**
     * An asynchronous coalesced allreduce reduces the tensors its list held when it was called: a caller that clears
     * and refills the list once the call has returned (a bucketing loop) changes nothing of it. Rank 1 makes its
     * calls only once rank 0 has refilled its list, so rank 0's coalesced call, queued behind an allreduce that
     * needs rank 1, runs after the refill.
     */
    @Test
    void anAsynchronousCallReducesTheTensorsItsListHeldWhenCalled() {
        CountDownLatch refilled = new CountDownLatch(1);
        List<float[][]> results = Jccl.runThreads(2, comm -> {
            if (comm.rank() == 1) {
                refilled.await();
            }
            Work first = comm.allReduceAsync(Tensor.of(new float[4]), ReduceOp.SUM, CollectiveOptions.DEFAULT);
            float[] a = {1 + comm.rank(), 2, 3};
            float[] b = {10 * (1 + comm.rank())};
            float[] other = {-1, -1, -1};
            List<Tensor> bucket = new ArrayList<>(List.of(Tensor.of(a), Tensor.of(b)));
            Work coalesced = comm.allReduceCoalescedAsync(bucket, ReduceOp.SUM, CollectiveOptions.DEFAULT);
            bucket.clear();
            bucket.add(Tensor.of(other));
            bucket.add(Tensor.of(new float[1]));
            refilled.countDown();
            first.await();
            coalesced.await();
            return new float[][] {a, b, other};
        });
        for (float[][] r : results) {
            assertArrayEquals(new float[] {3, 4, 6}, r[0]);
            assertArrayEquals(new float[] {30}, r[1]);
            assertArrayEquals(new float[] {-1, -1, -1}, r[2], "a tensor put in the list after the call");
        }
    }

    /**
     * Ranks whose lists split the same total otherwise ([3, 5] against [5, 3], or one tensor against two) summed
     * one tensor's elements into another's without an error: the signature carried only the total. Now every rank
     * fails with a mismatch in the layout, naming the peer.
     */
    @Test
    void listsThatSplitTheTotalOtherwiseFailEveryRankWithAMismatch() throws Exception {
        for (int[][] layouts : new int[][][] {{{3, 5}, {5, 3}}, {{8}, {4, 4}}}) {
            List<RankHarness.Outcome<Object>> out = RankHarness.run(2, java.time.Duration.ofSeconds(20), comm -> {
                List<Tensor> parts = new ArrayList<>();
                for (int n : layouts[comm.rank()]) {
                    parts.add(Tensor.of(new float[n]));
                }
                comm.allReduceCoalesced(parts, ReduceOp.SUM);
                return null;
            });
            RankHarness.assertEveryRankFails(out, "layout");
        }
    }
}
