package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Tree allreduce (seed exercise 1): a binomial reduce to rank 0, then a binomial broadcast from it.
 *
 * <p>Reduce, rounds k = 0..ceil(log2 P)-1: a rank whose bit k is set sends its partial result to rank - 2^k and is
 * done; a rank whose bits below k are clear receives from rank + 2^k (if it exists) and reduces. Broadcast mirrors
 * it. Cost ({@link #predictMicros}): logarithmic steps against the ring's linear ones, but the whole buffer in
 * each, so it wins for small T, where latency dominates, and loses for large T.
 * The summation order differs from gloo's ring, so float results agree with gloo within the bound of
 * docs/verification.md, not bit for bit; every rank gets the same bits.
 *
 * <p>A mismatch fails every rank: rank 0 needs every rank's contribution and every rank needs rank 0's result.
 */
public final class BinomialTreeAllReduce implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.ALL_REDUCE;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.TREE;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allReduce(call, operands.data(), operands.reduceOp());
    }

    /** 2 ceil(log2 P) steps of T bytes: rank 0 receives and sends 2T ceil(log2 P) bytes (T = buffer bytes). */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        double log = LinkCost.log2Ceil(topology.world());
        double t = bytes;
        return messages.micros(2 * log, 2 * t * log);
    }

    public static void allReduce(CollectiveCall call, Buf data, ReduceOp op) {
        int p = call.size();
        int r = call.rank();
        if (p == 1) {
            return;
        }
        int rounds = 32 - Integer.numberOfLeadingZeros(p - 1);
        int k = 0;
        for (; k < rounds; k++) {
            int bit = 1 << k;
            call.step(k, "tree reduce");
            if ((r & bit) != 0) {
                call.send(r - bit, data);
                break;
            }
            if (r + bit < p) {
                call.recvReduce(r + bit, data, op);
            }
        }
        // broadcast back down the same tree: receive from the parent, then serve the children, largest first
        int top = (r == 0) ? rounds : k;
        if (r != 0) {
            call.step(rounds + (rounds - 1 - k), "tree broadcast");
            call.recvInto(r - (1 << k), data);
        }
        for (int j = top - 1; j >= 0; j--) {
            int child = r + (1 << j);
            if (child < p) {
                call.step(rounds + (rounds - 1 - j), "tree broadcast");
                call.send(child, data);
            }
        }
    }
}
