package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Agreement that every rank made the same call, for algorithms whose data flow alone would let a rank finish
 * before a disagreement is seen (rooted trees, direct exchanges), and the whole of {@code barrier}.
 *
 * <p>Step 1: every rank sends an empty frame to r+1 and checks the one from r-1; a difference anywhere makes at
 * least two ranks fail here, and they stop. Steps 2..: a dissemination barrier (round k: send to r+2^k, receive
 * from r-2^k), which no rank completes until every rank has entered it, so no rank passes the check while another
 * has failed it: {@link #steps} steps of empty frames, no payload bytes.
 *
 * <p>As an algorithm object it is {@code barrier}'s {@link Algorithm#DISSEMINATION}; its cost is
 * {@link #predictMicros}.
 */
public final class SignatureCheck implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.BARRIER;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.DISSEMINATION;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        agree(call, 0);
    }

    /**
     * P-1+ceil(log2 P) steps of empty frames. (The check takes 1+ceil(log2 P) steps, see {@link #steps}; AUTO's
     * model has always counted P-1+ceil(log2 P), and changing it would change AUTO's barrier choices.)
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        return messages.micros(p - 1 + LinkCost.log2Ceil(p), 0);
    }

    /** The steps the check takes on {@code p} ranks: 1 + ceil(log2 P), none on one rank. */
    public static int steps(int p) {
        return p == 1 ? 0 : 1 + 32 - Integer.numberOfLeadingZeros(p - 1);
    }

    /**
     * Step 1 of the check alone, deferred agreement: every rank sends an empty frame to r+1 and checks the one from
     * r-1. Any difference between two ranks is a difference between neighbours on the ring, so at least two ranks
     * fail here and abort the others; but a rank that passes may finish its call before it hears of that (a root
     * that sends and returns). It hears at its next call, whose waits end on the abort. For the binomial broadcast,
     * whose non-roots accept data only from a parent with their own signature, so that no rank that returns holds
     * another root's data; the eager shared-memory broadcast defers in the same way. One step; returns the next.
     */
    public static int neighbours(CollectiveCall call, int firstStep) {
        int p = call.size();
        int r = call.rank();
        if (p == 1) {
            return firstStep;
        }
        Buf none = Buf.allocate(call.signature().dtype(), 0);
        call.step(firstStep, "signature check");
        call.sendRecv((r + 1) % p, none, (r - 1 + p) % p, none, null);
        return firstStep + 1;
    }

    /** Runs the check from {@code firstStep}; returns the next free step number. */
    public static int agree(CollectiveCall call, int firstStep) {
        int step = neighbours(call, firstStep);
        int p = call.size();
        int r = call.rank();
        Buf none = Buf.allocate(call.signature().dtype(), 0);
        for (int distance = 1; distance < p; distance <<= 1) {
            call.step(step++, "dissemination round " + Integer.numberOfTrailingZeros(distance));
            call.sendRecv((r + distance) % p, none, (r - distance + p) % p, none, null);
        }
        return step;
    }
}
