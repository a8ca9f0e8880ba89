package io.jccl.examples;

import io.jccl.Communicator;
import io.jccl.Jccl;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.util.Arrays;

/**
 * The smallest jccl program for {@code jccl launch}: every rank contributes rank+1, allreduces, checks the sum,
 * shards it with reduce_scatter, gathers it back, and prints what its byte counters saw.
 *
 * <pre>jccl launch -n 4 -- java -cp jccl-cli/target/jccl.jar io.jccl.examples.AllReduceDemo [ELEMENTS]</pre>
 */
public final class AllReduceDemo {
    private AllReduceDemo() {
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1 << 20;
        try (Communicator comm = Jccl.fromEnvironment()) {
            int p = comm.size();
            int count = (n + p - 1) / p * p;
            float[] x = new float[count];
            Arrays.fill(x, comm.rank() + 1);
            comm.allReduce(x, ReduceOp.SUM);
            float expected = p * (p + 1) / 2f;
            if (x[0] != expected || x[count - 1] != expected) {
                throw new AssertionError("allReduce gave " + x[0] + ", expected " + expected);
            }
            float[] shard = new float[count / p];
            comm.reduceScatter(Tensor.of(x), Tensor.of(shard), ReduceOp.AVG);
            comm.allGather(Tensor.of(shard), Tensor.of(x));
            comm.barrier();
            System.out.printf("rank %d of %d over %s: allReduce of %d floats = %.1f (expected %.1f); sent %d bytes, "
                            + "law 2T(N-1)/N = %d%n", comm.rank(), p, comm.transportName(), count, x[0], expected,
                    comm.counters().bytesSent(OpType.ALL_REDUCE), 2L * 4 * count * (p - 1) / p);
        }
    }
}
