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
        if (args.length > 0 && args[0].equals("auto-sweep")) {
            autoSweep();
            return;
        }
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

    /**
     * {@code auto-sweep}: allreduce, allgather, reduce_scatter and broadcast (from the last rank) with AUTO at sizes
     * from 4 B to 800 KB, each checked exactly; prints what AUTO chose for each ({@code ALGOS op:count=ALGO ...}),
     * which must be the same on every rank, and {@code EXACT ok} or the first wrong element.
     */
    private static void autoSweep() throws Exception {
        try (Communicator comm = Jccl.fromEnvironment()) {
            int p = comm.size();
            int me = comm.rank();
            System.out.println("TRANSPORT " + comm.transportName());
            StringBuilder algos = new StringBuilder();
            String exact = "ok";
            // per rank: 1 element to 800 KB, among them the sizes where AUTO once chose otherwise on a rank alone
            // on its host (4 + 1 ranks: allgathers of 400-480 floats a rank, allreduces of 3,760-5,870 floats)
            for (int n : new int[] {1, 7, 100, 400, 450, 800, 1000, 5000, 12_000, 50_000, 200_000}) {
                int m = n * p;
                for (OpType op : new OpType[] {OpType.ALL_REDUCE, OpType.ALL_GATHER, OpType.REDUCE_SCATTER,
                    OpType.BROADCAST}) {
                    int count = op == OpType.REDUCE_SCATTER ? n : op == OpType.ALL_GATHER ? n : m;
                    algos.append(' ').append(op.label()).append(':').append(count).append('=')
                            .append(comm.algorithmFor(op, DataType.FLOAT32, count));
                }
                float[] x = new float[m];
                for (int i = 0; i < m; i++) {
                    x[i] = (me + 1) * 1000 + i % 977;
                }
                comm.allReduce(Tensor.of(x), ReduceOp.SUM);
                for (int i = 0; i < m && exact.equals("ok"); i++) {
                    if (x[i] != 1000f * p * (p + 1) / 2 + (float) p * (i % 977)) {
                        exact = "allreduce of " + m + ": element " + i + " is " + x[i];
                    }
                }
                float[] in = new float[n];
                for (int i = 0; i < n; i++) {
                    in[i] = me * 1_000_000 + i;
                }
                float[] all = new float[m];
                comm.allGather(Tensor.of(in), Tensor.of(all));
                for (int i = 0; i < m && exact.equals("ok"); i++) {
                    if (all[i] != (i / n) * 1_000_000 + i % n) {
                        exact = "allgather of " + n + ": element " + i + " is " + all[i];
                    }
                }
                float[] block = new float[n];
                comm.reduceScatter(Tensor.of(all), Tensor.of(block), ReduceOp.SUM); // every rank the same input
                for (int i = 0; i < n && exact.equals("ok"); i++) {
                    if (block[i] != p * (me * 1_000_000f + i)) {
                        exact = "reduce_scatter of " + n + ": element " + i + " is " + block[i];
                    }
                }
                float[] b = new float[m];
                if (me == p - 1) {
                    for (int i = 0; i < m; i++) {
                        b[i] = i % 1013;
                    }
                }
                comm.broadcast(Tensor.of(b), p - 1);
                for (int i = 0; i < m && exact.equals("ok"); i++) {
                    if (b[i] != i % 1013) {
                        exact = "broadcast of " + m + ": element " + i + " is " + b[i];
                    }
                }
            }
            System.out.println("ALGOS" + algos);
            System.out.println("EXACT " + exact);
        }
    }
}
