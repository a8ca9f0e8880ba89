package io.jccl.examples;

import io.jccl.Algorithm;
import io.jccl.Communicator;
import io.jccl.DataType;
import io.jccl.Jccl;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.util.Arrays;

/**
 * The smallest jccl program for {@code jccl launch}: every rank contributes rank+1, allreduces, checks the sum,
 * shards it with reduce_scatter, gathers it back, and prints which algorithm AUTO ran for the allreduce, what its
 * byte counters saw and the traffic law of that algorithm ({@link AllReduceLaw}).
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
            Algorithm ran = comm.algorithmFor(OpType.ALL_REDUCE, DataType.FLOAT32, count);
            comm.allReduce(x, ReduceOp.SUM);
            float expected = p * (p + 1) / 2f;
            if (x[0] != expected || x[count - 1] != expected) {
                throw new AssertionError("allReduce gave " + x[0] + ", expected " + expected);
            }
            long sent = comm.counters().bytesSent(OpType.ALL_REDUCE);
            float[] shard = new float[count / p];
            comm.reduceScatter(Tensor.of(x), Tensor.of(shard), ReduceOp.AVG);
            comm.allGather(Tensor.of(shard), Tensor.of(x));
            comm.barrier();
            boolean threads = comm.transportName().equals("local");
            AllReduceLaw law = AllReduceLaw.of(ran, p, comm.rank(), count, 4, threads);
            // the shared-memory algorithm writes into shared memory what the message algorithms send
            System.out.printf("rank %d of %d over %s: allReduce of %d floats = %.1f (expected %.1f) by %s; %s, law %s%n",
                    comm.rank(), p, comm.transportName(), count, x[0], expected, ran,
                    ran == Algorithm.SHARED_MEMORY ? "wrote " + sent + " bytes to shared memory" : "sent " + sent
                            + " bytes",
                    law == null ? "of " + ran + ": see docs/algorithms.md" : law.formula() + " = " + law.bytes());
        }
    }
}
