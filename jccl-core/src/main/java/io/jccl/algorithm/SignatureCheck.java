package io.jccl.algorithm;

import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Agreement that every rank made the same call, for algorithms whose data flow alone would let a rank finish
 * before a disagreement is seen (rooted trees, direct exchanges), and the whole of {@code barrier}.
 *
 * <p>Step 1: every rank sends an empty frame to r+1 and checks the one from r-1; a difference anywhere makes at
 * least two ranks fail here, and they stop. Steps 2..: a dissemination barrier (round k: send to r+2^k, receive
 * from r-2^k), which no rank completes until every rank has entered it, so no rank passes the check while another
 * has failed it. Cost: 1 + ceil(log2 P) steps of empty frames, no payload bytes.
 */
public final class SignatureCheck {
    private SignatureCheck() {
    }

    /** Runs the check from {@code firstStep}; returns the next free step number. */
    public static int agree(CollectiveCall call, int firstStep) {
        int p = call.size();
        int r = call.rank();
        if (p == 1) {
            return firstStep;
        }
        Buf none = Buf.allocate(call.signature().dtype(), 0);
        int step = firstStep;
        call.step(step++, "signature check");
        call.send((r + 1) % p, none);
        call.recvInto((r - 1 + p) % p, none);
        for (int distance = 1; distance < p; distance <<= 1) {
            call.step(step++, "dissemination round " + Integer.numberOfTrailingZeros(distance));
            call.send((r + distance) % p, none);
            call.recvInto((r - distance + p) % p, none);
        }
        return step;
    }
}
