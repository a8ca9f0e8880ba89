package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.reduce.Reductions;
import io.jccl.step.CollectiveCall;

/**
 * Deterministic allreduce: every element is reduced in rank order, {@code ((x0 op x1) op x2) ... op x(P-1)}, on one
 * rank, so the result's bits depend only on the inputs and the world size, never on the transport, the chunking or
 * the timing. What deterministic mode ({@code CommunicatorConfig.withDeterministic}, {@code JCCL_DETERMINISTIC=1})
 * runs for floating-point allreduce.
 *
 * <p>The buffer is cut into P slices at the ring's bounds ({@link GlooChunking}); rank r owns slice r.
 * <ol>
 *   <li>All-to-all of slices, steps 0..P-2: at step s-1 (s = 1..P-1) rank r sends slice r+s of its input to rank
 *       r+s and receives rank r-s's copy of slice r (ranks mod P) into a scratch area of P slices, its own copy
 *       in place r; then it sums the P copies in rank order into slice r of the buffer.</li>
 *   <li>Allgather, steps P-1..2P-3: the ring allgather of {@link RingAllReduce} circulates the finished slices.</li>
 * </ol>
 * Every slice travels as the ring's segments ({@link RingAllReduce#SEGMENT_BYTES}), receives posted before sends.
 * Per rank: 2(P-1) steps and 2T(P-1)/P bytes sent (T = buffer bytes), exactly the ring's; the differences are a
 * scratch area of T bytes and the ordered sum, a pass over T bytes after the last slice has arrived that the ring
 * instead overlaps with its transfers.
 *
 * <p>AVG sums here and the pipeline divides by P afterwards, as for every allreduce: the division is one correctly
 * rounded operation on the same bits on every rank. Every rank hears from every other in step 1, so a signature
 * mismatch fails every rank.
 */
public final class OrderedAllReduce implements CollectiveAlgorithm {
    /** Elements summed per pass of the ordered sum: the result's block stays in cache while the P copies stream. */
    private static final int SUM_BLOCK = 4096;

    @Override
    public OpType operation() {
        return OpType.ALL_REDUCE;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.ORDERED;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allReduce(call, operands.data(), operands.reduceOp());
    }

    /**
     * The ring's figures, 2(P-1) steps and 2T(P-1)/P bytes: the model counts steps and bytes only. Left out, as
     * they are for every algorithm, are the local passes; here the ordered sum over T bytes comes after the
     * transfers of step 1 rather than overlapped with them, so this algorithm is never faster than the ring, and
     * AUTO never picks it ({@code AlgorithmSelector}).
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        return new RingAllReduce().predictMicros(bytes, topology, messages, arena); // the same steps and bytes
    }

    /** Reduces {@code data} on every rank in rank order, in place. */
    public static void allReduce(CollectiveCall call, Buf data, ReduceOp op) {
        int p = call.size();
        if (p == 1) {
            return;
        }
        int[] bounds = GlooChunking.bounds(data.count(), data.dtype().sizeBytes(), p);
        reduceSliceInRankOrder(call, data, bounds, RingAllReduce.chunk(data, bounds, call.rank()), op, 0);
        RingAllReduce.allGatherPhase(call, data, bounds, p - 1);
    }

    /**
     * Steps {@code firstStep}..{@code firstStep}+P-2: every rank's copy of this rank's slice r, elements
     * {@code [bounds[r], bounds[r + 1])} of {@code input}, reduced in rank order into {@code result} (as many
     * elements; it may be that slice of {@code input} itself). At each step rank r sends slice r+s of
     * {@code input} to rank r+s and receives slice r from rank r-s; {@code input} is only read.
     */
    static void reduceSliceInRankOrder(CollectiveCall call, Buf input, int[] bounds, Buf result, ReduceOp op,
                                       int firstStep) {
        int p = call.size();
        int r = call.rank();
        int n = bounds[r + 1] - bounds[r];
        Buf copies = call.scratch(input.dtype(), p * n);
        RingAllReduce.chunk(input, bounds, r).copyTo(copies, r * n);
        for (int s = 1; s < p; s++) {
            int to = (r + s) % p;
            int from = (r - s + p) % p;
            call.step(firstStep + s - 1, "exchange slices");
            RingAllReduce.exchange(call, to, RingAllReduce.chunk(input, bounds, to), from, copies.slice(from * n, n),
                    null);
        }
        sumInRankOrder(copies, p, n, result, op);
        call.releaseScratch(copies);
    }

    /**
     * {@code result[i] = ((c0[i] op c1[i]) op c2[i]) ... op c(P-1)[i]}, where copy j is elements
     * {@code [j*n, (j+1)*n)} of {@code copies}: the one summation order of deterministic mode.
     */
    static void sumInRankOrder(Buf copies, int p, int n, Buf result, ReduceOp op) {
        for (int lo = 0; lo < n; lo += SUM_BLOCK) {
            int len = Math.min(SUM_BLOCK, n - lo);
            Buf acc = result.slice(lo, len);
            copies.copyTo(lo, acc, 0, len);
            for (int j = 1; j < p; j++) {
                Reductions.reduce(op, acc, copies.slice(j * n + lo, len));
            }
        }
    }
}
