package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Ring allgather: P-1 rotations. Rank r first places its input in block r of the output; at step s it sends
 * block (r-s) mod P to rank r+1 and receives block (r-s-1) mod P from rank r-1, segment by segment as the ring
 * allreduce does ({@link RingAllReduce#exchange}).
 *
 * <p>Cost: {@link #predictMicros}. A rank that stops after its first receive starves every other rank of the P-1
 * frames it needs, so a signature mismatch fails every rank.
 */
public final class RingAllGather implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.ALL_GATHER;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.RING;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allGather(call, operands.input(), operands.output());
    }

    /** P-1 steps; T(P-1)/P bytes sent and received per rank (T = output bytes, P times the input). */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        t *= p;
        return messages.micros(p - 1, t * (p - 1) / p);
    }

    public static void allGather(CollectiveCall call, Buf input, Buf output) {
        int p = call.size();
        int r = call.rank();
        int c = input.count();
        input.copyTo(output, r * c);
        int to = (r + 1) % p;
        int from = (r - 1 + p) % p;
        for (int s = 0; s < p - 1; s++) {
            call.step(s, "rotate");
            RingAllReduce.exchange(call, to, output.slice(((r - s + p) % p) * c, c), from,
                    output.slice(((r - s - 1 + 2 * p) % p) * c, c), null);
        }
    }
}
