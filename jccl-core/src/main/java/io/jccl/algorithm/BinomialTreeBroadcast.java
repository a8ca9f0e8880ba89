package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Binomial-tree broadcast. With ranks renumbered v = (r - root) mod P, rank v > 0 receives the whole buffer from
 * v - 2^floor(log2 v), then sends it to v + 2^k for every 2^k > v with v + 2^k < P, smallest first.
 *
 * <p>Cost: {@link #predictMicros}; each non-root receives T bytes once. Preceded by {@link SignatureCheck}, since
 * a rank that wrongly believes it is the root would otherwise send and return.
 */
public final class BinomialTreeBroadcast implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.BROADCAST;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.TREE;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        broadcast(call, operands.data(), operands.root());
    }

    /**
     * ceil(log2 P) steps; a rank sends T bytes to each of its children, the root to ceil(log2 P) of them (T =
     * buffer bytes). The signature check's empty frames are not counted.
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        double log = LinkCost.log2Ceil(topology.world());
        double t = bytes;
        return messages.micros(log, t * log);
    }

    public static void broadcast(CollectiveCall call, Buf data, int root) {
        int p = call.size();
        if (p == 1) {
            return;
        }
        int step = SignatureCheck.agree(call, 0);
        int v = (call.rank() - root + p) % p;
        int mask = 1;
        if (v != 0) {
            int parentBit = Integer.highestOneBit(v);
            call.step(step + Integer.numberOfTrailingZeros(parentBit), "tree receive");
            call.recvInto((v - parentBit + root) % p, data);
            mask = parentBit << 1;
        }
        for (; mask < p; mask <<= 1) {
            if (v + mask < p) {
                call.step(step + Integer.numberOfTrailingZeros(mask), "tree send");
                call.send((v + mask + root) % p, data);
            }
        }
    }
}
