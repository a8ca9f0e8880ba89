package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Rabenseifner's allreduce: recursive-halving reduce-scatter, then recursive-doubling allgather, for any world
 * size. With p2 the largest power of two not above P and rem = P - p2, the first 2 rem ranks pair up first: each
 * even one sends its whole buffer to the odd one above it, which reduces it, and waits for the result at the end;
 * the remaining p2 ranks run the power-of-two algorithm.
 *
 * <p>Halving, rounds k = 1..log2 p2 with distance d = p2 / 2^k: a rank and its partner (virtual rank xor d) split
 * their current range in two; the lower keeps the lower half, sends the upper and reduces the partner's lower half
 * into its own; after the last round each rank owns 1/p2 of the buffer, reduced. Doubling retraces the rounds,
 * exchanging owned ranges. Cost ({@link #predictMicros}): the ring's bandwidth in logarithmic latency. The
 * summation order is a tree per element, so floats agree with gloo within the bound of docs/verification.md; every
 * rank gets the same bits.
 */
public final class HalvingDoublingAllReduce implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.ALL_REDUCE;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.HALVING_DOUBLING;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allReduce(call, operands.data(), operands.reduceOp());
    }

    /**
     * 2 ceil(log2 P) steps moving 2T(P-1)/P bytes per rank (T = buffer bytes); when P is not a power of two, two
     * more steps and 2T more bytes for folding the extra ranks in and out.
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double log = LinkCost.log2Ceil(p);
        double t = bytes;
        boolean pow2 = LinkCost.isPow2(p);
        int l = topology.ranksPerHost();
        if (pow2 && topology.multiHost() && topology.hostsContiguous() && l > 1) {
            // across hosts: in a step whose partner is at distance d >= L, all L ranks of a host send their half
            // through the host's one link at once; the steps within a host cost what local messages cost
            double crossSteps = 0;
            double crossBytes = 0;
            double localSteps = 0;
            double localBytes = 0;
            for (int k = 0; (p >> (k + 1)) >= 1; k++) {
                double b = t / (2L << k);
                if ((p >> (k + 1)) >= l) {
                    crossSteps += 2;
                    crossBytes += 2 * l * b;
                } else {
                    localSteps += 2;
                    localBytes += 2 * b;
                }
            }
            return messages.micros(crossSteps, crossBytes) + topology.intraHost(messages).micros(localSteps, localBytes);
        }
        return messages.micros(2 * log + (pow2 ? 0 : 2), 2 * t * (p - 1) / p + (pow2 ? 0 : 2 * t));
    }

    public static void allReduce(CollectiveCall call, Buf data, ReduceOp op) {
        int p = call.size();
        int r = call.rank();
        if (p == 1) {
            return;
        }
        int p2 = Integer.highestOneBit(p);
        int rem = p - p2;
        int rounds = Integer.numberOfTrailingZeros(p2);
        call.step(0, "fold to a power of two");
        int v; // virtual rank among p2, or -1 for a folded-away rank
        if (r < 2 * rem) {
            if ((r & 1) == 0) {
                call.send(r + 1, data);
                v = -1;
            } else {
                call.recvReduce(r - 1, data, op);
                v = r / 2;
            }
        } else {
            v = r - rem;
        }
        if (v >= 0) {
            int n = data.count();
            int[] lo = new int[rounds + 1];
            int[] hi = new int[rounds + 1];
            lo[0] = 0;
            hi[0] = n;
            for (int k = 0; k < rounds; k++) {
                int d = p2 >> (k + 1);
                int partner = real(v ^ d, rem);
                int mid = lo[k] + (hi[k] - lo[k]) / 2;
                call.step(1 + k, "recursive halving");
                if ((v & d) == 0) {
                    RingAllReduce.exchange(call, partner, data.slice(mid, hi[k] - mid), partner,
                            data.slice(lo[k], mid - lo[k]), op);
                    lo[k + 1] = lo[k];
                    hi[k + 1] = mid;
                } else {
                    RingAllReduce.exchange(call, partner, data.slice(lo[k], mid - lo[k]), partner,
                            data.slice(mid, hi[k] - mid), op);
                    lo[k + 1] = mid;
                    hi[k + 1] = hi[k];
                }
            }
            for (int k = rounds - 1; k >= 0; k--) {
                int d = p2 >> (k + 1);
                int partner = real(v ^ d, rem);
                int mid = lo[k] + (hi[k] - lo[k]) / 2;
                call.step(1 + rounds + (rounds - 1 - k), "recursive doubling");
                Buf other = (v & d) == 0 ? data.slice(mid, hi[k] - mid) : data.slice(lo[k], mid - lo[k]);
                RingAllReduce.exchange(call, partner, data.slice(lo[k + 1], hi[k + 1] - lo[k + 1]), partner, other, null);
            }
        }
        call.step(1 + 2 * rounds, "unfold");
        if (r < 2 * rem) {
            if ((r & 1) == 0) {
                call.recvInto(r + 1, data);
            } else {
                call.send(r - 1, data);
            }
        }
    }

    /** The real rank of virtual rank {@code v}. */
    private static int real(int v, int rem) {
        return v < rem ? 2 * v + 1 : v + rem;
    }
}
