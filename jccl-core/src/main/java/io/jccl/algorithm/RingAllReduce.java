package io.jccl.algorithm;

import io.jccl.ReduceOp;
import io.jccl.core.Buf;
import io.jccl.core.CollectiveCall;

/**
 * Two-pass ring allreduce in gloo's summation order: a reduce-scatter pass, then an allgather pass.
 *
 * <p>The buffer is cut into P chunks by {@link GlooChunking}. Data flows from rank r to rank r-1. Reduce-scatter,
 * steps s = 0..P-2: rank r sends chunk (r+1+s) mod P to r-1 and receives chunk (r+2+s) mod P from r+1, reducing
 * it into its copy; afterwards rank r holds chunk r reduced in the order x[r-1], x[r-2], ..., x[r] (ranks mod P),
 * exactly gloo's. Allgather, steps P-1..2P-3: rank r sends the finished chunk (r+s) mod P to r-1 and stores chunk
 * (r+s+1) mod P from r+1.
 *
 * <p>Cost per rank: 2(P-1) steps; 2T(P-1)/P bytes sent and as many received when chunks are equal (T = buffer
 * bytes). A signature mismatch fails every rank: a rank that stops after its first receive starves every other
 * rank of the 2(P-1) frames it needs.
 */
public final class RingAllReduce {
    private RingAllReduce() {
    }

    public static void allReduce(CollectiveCall call, Buf data, ReduceOp op) {
        int p = call.size();
        if (p == 1) {
            return;
        }
        int[] bounds = GlooChunking.bounds(data.count(), data.dtype().sizeBytes(), p);
        reduceScatterPhase(call, data, op, bounds);
        allGatherPhase(call, data, bounds, p - 1);
    }

    /** Steps 0..P-2: afterwards this rank holds chunk {@code rank} of {@code data} fully reduced. */
    static void reduceScatterPhase(CollectiveCall call, Buf data, ReduceOp op, int[] bounds) {
        int p = call.size();
        int r = call.rank();
        int to = (r - 1 + p) % p;
        int from = (r + 1) % p;
        for (int s = 0; s < p - 1; s++) {
            call.step(s, "reduce-scatter");
            call.send(to, chunk(data, bounds, (r + 1 + s) % p));
            call.recvReduce(from, chunk(data, bounds, (r + 2 + s) % p), op);
        }
    }

    /** Steps first..first+P-2: circulates the finished chunks until every rank has all of them. */
    static void allGatherPhase(CollectiveCall call, Buf data, int[] bounds, int firstStep) {
        int p = call.size();
        int r = call.rank();
        int to = (r - 1 + p) % p;
        int from = (r + 1) % p;
        for (int s = 0; s < p - 1; s++) {
            call.step(firstStep + s, "allgather");
            call.send(to, chunk(data, bounds, (r + s) % p));
            call.recvInto(from, chunk(data, bounds, (r + s + 1) % p));
        }
    }

    static Buf chunk(Buf data, int[] bounds, int c) {
        return data.slice(bounds[c], bounds[c + 1] - bounds[c]);
    }
}
