package io.jccl.algorithm;

import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Scatter from a root: after {@link SignatureCheck}, the root sends block i of its input to rank i. Cost: one
 * step; the root sends T(P-1)/P bytes (T = input bytes).
 */
public final class DirectScatter {
    private DirectScatter() {
    }

    public static void scatter(CollectiveCall call, Buf input, Buf output, int root) {
        int p = call.size();
        int r = call.rank();
        int c = output.count();
        int step = SignatureCheck.agree(call, 0);
        call.step(step, "scatter");
        if (r != root) {
            call.recvInto(root, output);
            return;
        }
        for (int peer = 0; peer < p; peer++) {
            if (peer != root) {
                call.send(peer, input.slice(peer * c, c));
            }
        }
        input.copyTo(r * c, output, 0, c);
    }
}
