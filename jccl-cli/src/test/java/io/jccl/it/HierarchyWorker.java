package io.jccl.it;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.Communicator;
import io.jccl.DataType;
import io.jccl.Jccl;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.util.Arrays;
import java.util.Random;

/**
 * A rank for the multi-host tests, started as its own JVM: prints what AUTO picks for a large allreduce
 * ({@code ALGO <name>}), then allreduces doubles of wildly different magnitudes (seeded by rank) with the
 * hierarchical algorithm and prints a hash of the result's bits ({@code HASH <n>}), and checks an allreduce of
 * integers in floats against the exact sum ({@code EXACT ok}, or the first element that differs).
 */
public final class HierarchyWorker {
    private HierarchyWorker() {
    }

    public static void main(String[] args) throws Exception {
        try (Communicator comm = Jccl.fromEnvironment()) {
            int p = comm.size();
            System.out.println("TRANSPORT " + comm.transportName());
            System.out.println("ALGO " + comm.algorithmFor(OpType.ALL_REDUCE, DataType.FLOAT32, 16 << 20));
            CollectiveOptions hier = CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.HIERARCHICAL);
            int n = 1_100_003; // 8.8 MB of doubles: pipelined (HostPipeline.CHUNK_BYTES); 4.4 MB of floats: not
            Random rnd = new Random(comm.rank() * 7919L + 1);
            double[] x = new double[n];
            for (int i = 0; i < n; i++) {
                x[i] = rnd.nextGaussian() * Math.pow(10, rnd.nextInt(12) - 6);
            }
            comm.allReduce(Tensor.of(x), ReduceOp.SUM, hier);
            System.out.println("HASH " + Arrays.hashCode(x));
            float[] f = new float[n];
            for (int i = 0; i < n; i++) {
                f[i] = (comm.rank() + 1) * 1000 + i % 977;
            }
            comm.allReduce(Tensor.of(f), ReduceOp.SUM, hier);
            String exact = "ok";
            for (int i = 0; i < n && exact.equals("ok"); i++) {
                float want = 1000f * p * (p + 1) / 2 + (float) p * (i % 977);
                if (f[i] != want) {
                    exact = "element " + i + " is " + f[i] + ", not " + want;
                }
            }
            System.out.println("EXACT " + exact);
        }
    }
}
