package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Bruck's allgather, for small blocks: ceil(log2 P) rounds instead of the ring's P-1. Rank r keeps its blocks in
 * the rotated order r, r+1, ...; in round k it sends its first min(2^k, P - 2^k) blocks to rank r - 2^k and appends
 * as many from rank r + 2^k; a final local rotation puts block i at position i.
 *
 * <p>Cost: {@link #predictMicros}. Data movement only: results are identical to the ring's.
 */
public final class BruckAllGather implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.ALL_GATHER;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.BRUCK;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allGather(call, operands.input(), operands.output());
    }

    /** ceil(log2 P) steps; T(P-1)/P bytes sent per rank (T = output bytes), plus the final local copy of T. */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        t *= p;
        return messages.micros(LinkCost.log2Ceil(p), t * (p - 1) / p + t);
    }

    public static void allGather(CollectiveCall call, Buf input, Buf output) {
        int p = call.size();
        int r = call.rank();
        int c = input.count();
        Buf tmp = call.scratchCopy(output);
        input.copyTo(tmp, 0);
        int have = 1;
        int step = 0;
        for (int dist = 1; dist < p; dist <<= 1) {
            int blocks = Math.min(dist, p - dist);
            call.step(step++, "bruck round");
            call.sendRecv((r - dist + p) % p, tmp.slice(0, blocks * c), (r + dist) % p, tmp.slice(have * c, blocks * c),
                    null);
            have += blocks;
        }
        for (int j = 0; j < p; j++) {
            tmp.copyTo(((j - r + p) % p) * c, output, j * c, c);
        }
        call.releaseScratch(tmp);
    }
}
