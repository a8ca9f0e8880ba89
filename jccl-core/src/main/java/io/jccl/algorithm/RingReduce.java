package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Reduce to a root: the reduce-scatter pass of {@link RingAllReduce}, then every rank sends its finished chunk to
 * the root. The root's result is bit-identical to an allreduce of the same data.
 *
 * <p>Cost: {@link #predictMicros}. The root is part of every header, so the ring pass detects a rank that names
 * another root. Only the root's buffer changes.
 */
public final class RingReduce implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.REDUCE;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.RING;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        reduce(call, operands.data(), operands.root(), operands.reduceOp());
    }

    /**
     * P-1 ring steps of T/P bytes per rank, then one step in which the root receives T(P-1)/P bytes (T = buffer
     * bytes); nothing on one rank.
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        return p == 1 ? 0 : messages.micros(p, 2 * t * (p - 1) / p);
    }

    public static void reduce(CollectiveCall call, Buf data, int root, ReduceOp op) {
        int p = call.size();
        int r = call.rank();
        if (p == 1) {
            return;
        }
        Buf work = call.scratchLike(data, data.count()); // pass 1 reads data once and writes only work
        int[] bounds = GlooChunking.bounds(work.count(), work.dtype().sizeBytes(), p);
        RingAllReduce.reduceScatterPhase(call, data, work, op, bounds);
        call.step(p - 1, "gather to root");
        if (r != root) {
            call.send(root, RingAllReduce.chunk(work, bounds, r));
            call.releaseScratch(work);
            return;
        }
        RingAllReduce.chunk(work, bounds, r).copyTo(data, bounds[r]);
        call.releaseScratch(work);
        for (int peer = 0; peer < p; peer++) {
            if (peer != root) {
                call.recvInto(peer, RingAllReduce.chunk(data, bounds, peer));
            }
        }
    }
}
