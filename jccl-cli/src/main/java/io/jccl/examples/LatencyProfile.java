package io.jccl.examples;

import io.jccl.Communicator;
import io.jccl.Jccl;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where a small collective's time goes on each rank: wall time per barrier + allreduce, the calling thread's CPU
 * time split into user and kernel time, and its context switches (from {@code /proc/thread-self/status}).
 * {@code jccl launch -n 4 -- java -cp jccl-cli/target/jccl.jar io.jccl.examples.LatencyProfile [iterations]
 * [floats]}; see docs/performance.md.
 */
public final class LatencyProfile {
    private LatencyProfile() {
    }

    public static void main(String[] args) throws Exception {
        int iterations = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int floats = args.length > 1 ? Integer.parseInt(args[1]) : 1;
        try (Communicator comm = Jccl.fromEnvironment()) {
            float[] x = new float[floats];
            for (int i = 0; i < 30_000; i++) { // let the JIT compile the path first
                comm.barrier();
                comm.allReduce(Tensor.of(x), ReduceOp.SUM);
            }
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            long[] switches0 = contextSwitches();
            long cpu0 = threads.getCurrentThreadCpuTime();
            long user0 = threads.getCurrentThreadUserTime();
            long t0 = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                comm.barrier();
                comm.allReduce(Tensor.of(x), ReduceOp.SUM);
            }
            long t1 = System.nanoTime();
            long cpu = threads.getCurrentThreadCpuTime() - cpu0;
            long user = threads.getCurrentThreadUserTime() - user0;
            long[] switches1 = contextSwitches();
            System.out.printf("rank %d: %.2f us per barrier+allreduce of %d floats; thread CPU %.2f us (user %.2f, "
                    + "kernel %.2f); %.2f voluntary + %.2f involuntary context switches%n", comm.rank(),
                    (t1 - t0) / 1e3 / iterations, floats, cpu / 1e3 / iterations, user / 1e3 / iterations,
                    (cpu - user) / 1e3 / iterations, (double) (switches1[0] - switches0[0]) / iterations,
                    (double) (switches1[1] - switches0[1]) / iterations);
        }
    }

    /** {voluntary, involuntary} context switches of the calling thread so far (zeros where /proc has none). */
    private static long[] contextSwitches() throws java.io.IOException {
        long[] out = new long[2];
        Path status = Path.of("/proc/thread-self/status");
        if (!Files.exists(status)) {
            return out;
        }
        for (String line : Files.readAllLines(status)) {
            if (line.startsWith("voluntary_ctxt_switches")) {
                out[0] = Long.parseLong(line.split("\\s+")[1]);
            } else if (line.startsWith("nonvoluntary_ctxt_switches")) {
                out[1] = Long.parseLong(line.split("\\s+")[1]);
            }
        }
        return out;
    }
}
