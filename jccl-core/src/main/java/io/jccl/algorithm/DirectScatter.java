package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Scatter from a root: after {@link SignatureCheck}, the root sends block i of its input to rank i. Cost:
 * {@link #predictMicros}.
 */
public final class DirectScatter implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.SCATTER;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.DIRECT;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        scatter(call, operands.input(), operands.output(), operands.root());
    }

    /**
     * The {@link SignatureCheck}, then one step in which the root sends T(P-1)/P bytes (T = input bytes, P times
     * the output).
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        t *= p;
        return messages.micros(SignatureCheck.steps(p) + 1, t * (p - 1) / p);
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
