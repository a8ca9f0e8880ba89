package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * All-to-all with equal blocks: block j of rank i's input becomes block i of rank j's output. P-1 pairwise
 * steps: at step s rank r sends block r+s to rank r+s and receives block r-s's contribution from rank r-s.
 *
 * <p>Cost: {@link #predictMicros}. Every rank hears from every
 * other, so a signature mismatch is seen by every rank.
 */
public final class PairwiseAllToAll implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.ALL_TO_ALL;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.PAIRWISE;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allToAll(call, operands.input(), operands.output());
    }

    /** P-1 steps; T(P-1)/P bytes sent and received per rank (T = input bytes). */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        return messages.micros(p - 1, t * (p - 1) / p);
    }

    public static void allToAll(CollectiveCall call, Buf input, Buf output) {
        int p = call.size();
        int r = call.rank();
        int c = input.count() / p;
        input.copyTo(r * c, output, r * c, c);
        for (int s = 1; s < p; s++) {
            int to = (r + s) % p;
            int from = (r - s + p) % p;
            call.step(s - 1, "exchange");
            call.send(to, input.slice(to * c, c));
            call.recvInto(from, output.slice(from * c, c));
        }
    }
}
