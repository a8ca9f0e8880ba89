package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Deterministic reduce_scatter: output element i of rank r is {@code ((x0 op x1) op x2) ... op x(P-1)} of input
 * element {@code r*C + i} (C = output elements), reduced on rank r in rank order, so its bits depend only on the
 * inputs and the world size, and equal those of {@link OrderedAllReduce} on the same input. What deterministic mode
 * runs for floating-point reduce_scatter.
 *
 * <p>The slice of rank r is its output block {@code [r*C, (r+1)*C)}. P-1 pairwise steps (at step s-1, s = 1..P-1,
 * rank r sends block r+s of its input to rank r+s and receives rank r-s's block r), into a scratch area of P
 * blocks, then the ordered sum into the output: the all-to-all of {@link PairwiseAllToAll} followed by a local sum.
 * Per rank: P-1 steps and T(P-1)/P bytes sent (T = input bytes), the ring's. The input is not modified; AVG's
 * division is the pipeline's.
 */
public final class OrderedReduceScatter implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.REDUCE_SCATTER;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.ORDERED;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        reduceScatter(call, operands.input(), operands.output(), operands.reduceOp());
    }

    /**
     * The ring's figures, P-1 steps and T(P-1)/P bytes (T = input bytes, P times the output); the ordered sum, a
     * pass over T bytes after the transfers, is outside the model, and AUTO never picks this algorithm.
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        t *= p;
        return messages.micros(p - 1, t * (p - 1) / p);
    }

    /** Block r of the rank-order reduction of every rank's {@code input} into {@code output}. */
    public static void reduceScatter(CollectiveCall call, Buf input, Buf output, ReduceOp op) {
        int p = call.size();
        if (p == 1) {
            input.copyTo(output, 0);
            return;
        }
        int block = output.count();
        int[] bounds = new int[p + 1];
        for (int c = 0; c <= p; c++) {
            bounds[c] = c * block;
        }
        OrderedAllReduce.reduceSliceInRankOrder(call, input, bounds, output, op, 0);
    }
}
