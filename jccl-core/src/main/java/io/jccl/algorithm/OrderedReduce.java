package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Deterministic reduce to a root: step 1 of {@link OrderedAllReduce} (rank r ends holding slice r summed in rank
 * order), then every rank sends its finished slice to the root. The root's result is bit-identical to
 * {@link OrderedAllReduce} on the same input; other ranks' buffers are unchanged. What deterministic mode runs for
 * floating-point reduce.
 *
 * <p>Per rank: P steps; T(P-1)/P bytes sent in step 1 plus T/P to the root (T = buffer bytes), as
 * {@link RingReduce}. The root is part of every header, and every rank hears from every other in step 1, so a
 * rank that names another root fails every rank.
 */
public final class OrderedReduce implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.REDUCE;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.ORDERED;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        reduce(call, operands.data(), operands.root(), operands.reduceOp());
    }

    /**
     * {@link RingReduce}'s figures: P steps, the root receiving 2T(P-1)/P bytes in all; the ordered sum, a pass
     * over T bytes after step 1's transfers, is outside the model, and AUTO never picks this algorithm.
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        return new RingReduce().predictMicros(bytes, topology, messages, arena); // the same steps and bytes
    }

    /** The rank-order reduction of every rank's {@code data} into the root's {@code data}. */
    public static void reduce(CollectiveCall call, Buf data, int root, ReduceOp op) {
        int p = call.size();
        int r = call.rank();
        if (p == 1) {
            return;
        }
        int[] bounds = GlooChunking.bounds(data.count(), data.dtype().sizeBytes(), p);
        Buf mine = r == root ? RingAllReduce.chunk(data, bounds, r)
                : call.scratch(data.dtype(), bounds[r + 1] - bounds[r]);
        OrderedAllReduce.reduceSliceInRankOrder(call, data, bounds, mine, op, 0);
        call.step(p - 1, "gather to root");
        if (r != root) {
            call.send(root, mine);
            call.releaseScratch(mine);
            return;
        }
        CollectiveCall.Receive[] posted = new CollectiveCall.Receive[p];
        for (int peer = 0; peer < p; peer++) {
            if (peer != root) {
                posted[peer] = call.postRecv(peer, RingAllReduce.chunk(data, bounds, peer), null);
            }
        }
        for (int peer = 0; peer < p; peer++) {
            if (peer != root) {
                call.complete(posted[peer]);
            }
        }
    }
}
