package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Gather to a root: after {@link SignatureCheck}, every other rank sends its input to the root, which stores the
 * input of rank i in block i of its output. Cost: {@link #predictMicros}.
 */
public final class DirectGather implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.GATHER;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.DIRECT;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        gather(call, operands.input(), operands.output(), operands.root());
    }

    /**
     * The {@link SignatureCheck}, then one step in which the root receives T(P-1)/P bytes (T = output bytes, P
     * times the input).
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        t *= p;
        return messages.micros(SignatureCheck.steps(p) + 1, t * (p - 1) / p);
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
