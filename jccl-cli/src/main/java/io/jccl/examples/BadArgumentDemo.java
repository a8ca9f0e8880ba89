package io.jccl.examples;

import io.jccl.Communicator;
import io.jccl.Jccl;
import io.jccl.Tensor;

/**
 * A job in which one rank passes a bad argument, to see what its peers are told (docs/diagnostics.md): rank
 * {@code BAD} (default 1) gives its allGather an output one element short, which it refuses locally, while the
 * others make the call correctly. Each rank prints what its call and its next call raised, and how long the call
 * took to fail.
 *
 * <pre>jccl launch -n 3 -- java -cp jccl-cli/target/jccl.jar io.jccl.examples.BadArgumentDemo</pre>
 */
public final class BadArgumentDemo {
    private BadArgumentDemo() {
    }

    public static void main(String[] args) {
        int bad = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        try (Communicator comm = Jccl.fromEnvironment()) {
            float[] in = {comm.rank(), 1};
            float[] out = new float[comm.size() * in.length - (comm.rank() == bad ? 1 : 0)];
            long start = System.nanoTime();
            try {
                comm.allGather(Tensor.of(in), Tensor.of(out));
            } catch (RuntimeException e) {
                System.out.println("[rank " + comm.rank() + ", " + (System.nanoTime() - start) / 1_000_000 + " ms] "
                        + e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            try {
                comm.barrier();
            } catch (RuntimeException e) {
                System.out.println("[rank " + comm.rank() + ", next call] " + e.getClass().getSimpleName() + ": "
                        + e.getMessage());
            }
        }
    }
}
