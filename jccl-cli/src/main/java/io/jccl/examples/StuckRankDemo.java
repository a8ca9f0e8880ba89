package io.jccl.examples;

import io.jccl.Communicator;
import io.jccl.Jccl;
import io.jccl.JcclException;

/**
 * A job with one stuck rank, to see what jccl's diagnostics say (docs/diagnostics.md): every rank makes five
 * allreduces; then rank {@code STUCK} (default 3) stops calling jccl (it sleeps, as a rank stuck in a data loader
 * or a deadlock of its own would) while the others call a sixth, time out ({@code JCCL_TIMEOUT_MS}), name it, and
 * write their flight records ({@code JCCL_FLIGHT_RECORDER_DIR}) for {@code jccl analyze}.
 *
 * <pre>JCCL_TIMEOUT_MS=3000 JCCL_FLIGHT_RECORDER_DIR=/tmp/fr jccl launch -n 4 -- \
 *     java -cp jccl-cli/target/jccl.jar io.jccl.examples.StuckRankDemo
 * jccl analyze /tmp/fr</pre>
 */
public final class StuckRankDemo {
    private StuckRankDemo() {
    }

    public static void main(String[] args) throws InterruptedException {
        int stuck = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        try (Communicator comm = Jccl.fromEnvironment()) {
            float[] grad = new float[1 << 16];
            for (int i = 0; i < 5; i++) {
                comm.allReduce(grad);
            }
            if (comm.rank() == stuck) {
                Thread.sleep(600_000);
                return;
            }
            try {
                comm.allReduce(grad);
            } catch (JcclException e) {
                System.out.println(e.getMessage());
                System.exit(1);
            }
        }
    }
}
