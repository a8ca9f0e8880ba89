package io.jccl.algorithm;

import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Gather to a root: after {@link SignatureCheck}, every other rank sends its input to the root, which stores the
 * input of rank i in block i of its output. Cost: one step; the root receives T(P-1)/P bytes (T = output bytes).
 */
public final class DirectGather {
    private DirectGather() {
    }

    public static void gather(CollectiveCall call, Buf input, Buf output, int root) {
        int p = call.size();
        int r = call.rank();
        int c = input.count();
        int step = SignatureCheck.agree(call, 0);
        call.step(step, "gather");
        if (r != root) {
            call.send(root, input);
            return;
        }
        input.copyTo(output, r * c);
        for (int peer = 0; peer < p; peer++) {
            if (peer != root) {
                call.recvInto(peer, output.slice(peer * c, c));
            }
        }
    }
}
