import io.jccl.Algorithm;
import io.jccl.Communicator;
import io.jccl.CollectiveOptions;
import io.jccl.DataType;
import io.jccl.Jccl;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * One collective repeated in steady state, with what {@code jccl bench} does not show: the context switches per
 * call of each kind of thread of this rank's process (from {@code /proc/self/task}, Linux), beside the time and the
 * process's CPU per call. Nothing else runs in the measured window (the bench's JIT warm-up of small sizes does, so
 * a system-wide count taken while a bench runs mostly counts the warm-up). Run as a source file, one JVM per rank:
 *
 * <pre>
 * ./jccl launch -n 4 --transport tcp -- java -cp jccl-cli/target/jccl.jar scripts/CallProbe.java \
 *     BYTES ITERATIONS array|direct allreduce|broadcast|allgather|reducescatter [ALGORITHM]
 * </pre>
 *
 * ALGORITHM is one of {@link Algorithm}'s names (default AUTO). Each rank prints one line: ms per call, CPU ms per call, and per thread kind voluntary/involuntary switches per
 * call ({@code java} is the calling thread, {@code jccl-tcp-read} the connections' readers). Used in
 * docs/performance.md ("Where the CPU of a 64 MiB allreduce over TCP goes").
 */
public final class CallProbe {
    private CallProbe() {
    }

    public static void main(String[] args) throws Exception {
        int bytes = Integer.parseInt(args[0]);
        int iterations = Integer.parseInt(args[1]);
        boolean direct = args.length > 2 && args[2].equals("direct");
        String op = args.length > 3 ? args[3] : "allreduce";
        Algorithm algorithm = args.length > 4 ? Algorithm.valueOf(args[4].toUpperCase(java.util.Locale.ROOT))
                : Algorithm.AUTO;
        try (Communicator comm = Jccl.fromEnvironment()) {
            int p = comm.size();
            int n = bytes / 4 / p * p;
            Tensor whole = tensor(n, direct);
            Tensor shard = tensor(n / p, direct);
            CollectiveOptions o = CollectiveOptions.DEFAULT.withAlgorithm(algorithm);
            Runnable call = () -> {
                switch (op) {
                    case "allreduce": comm.allReduce(whole, ReduceOp.SUM, o); break;
                    case "broadcast": comm.broadcast(whole, 0, o); break;
                    case "allgather": comm.allGather(shard, whole, o); break;
                    case "reducescatter": comm.reduceScatter(whole, shard, ReduceOp.SUM, o); break;
                    default: throw new IllegalArgumentException("unknown collective " + op);
                }
            };
            for (int i = 0; i < 3; i++) {
                call.run();
            }
            comm.barrier();
            Map<String, long[]> before = switches();
            long cpu0 = cpuNanos();
            long t0 = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                call.run();
            }
            long t1 = System.nanoTime();
            long cpu1 = cpuNanos();
            Map<String, long[]> after = switches();
            StringBuilder sb = new StringBuilder();
            for (Map.Entry<String, long[]> e : after.entrySet()) {
                long[] b = before.getOrDefault(e.getKey(), new long[2]);
                long vol = e.getValue()[0] - b[0];
                long invol = e.getValue()[1] - b[1];
                if (vol + invol >= iterations) {
                    sb.append(String.format(" %s=%d/%d", e.getKey(), vol / iterations, invol / iterations));
                }
            }
            System.out.printf("rank %d: %s %s %s %d B: %.2f ms/call (%.3f us), cpu %.2f ms/call, switches/call "
                    + "vol/invol:%s%n", comm.rank(), op, algorithm, direct ? "direct" : "array", bytes,
                    (t1 - t0) / 1e6 / iterations, (t1 - t0) / 1e3 / iterations, (cpu1 - cpu0) / 1e6 / iterations, sb);
        }
    }

    private static Tensor tensor(int count, boolean direct) {
        if (!direct) {
            return Tensor.of(new float[count]);
        }
        return Tensor.of(ByteBuffer.allocateDirect(count * 4).order(ByteOrder.LITTLE_ENDIAN), DataType.FLOAT32);
    }

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** Voluntary and involuntary context switches so far, summed per thread name without its trailing number. */
    private static Map<String, long[]> switches() throws Exception {
        Map<String, long[]> m = new TreeMap<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path t : tasks) {
                String name;
                java.util.List<String> status;
                try {
                    name = Files.readString(t.resolve("comm")).trim().replaceAll("[-#]?[0-9]+$", "");
                    status = Files.readAllLines(t.resolve("status"));
                } catch (java.io.IOException gone) { // the thread ended meanwhile
                    continue;
                }
                long[] a = m.computeIfAbsent(name, k -> new long[2]);
                for (String l : status) {
                    if (l.startsWith("voluntary_ctxt_switches")) {
                        a[0] += Long.parseLong(l.split("\\s+")[1]);
                    } else if (l.startsWith("nonvoluntary_ctxt_switches")) {
                        a[1] += Long.parseLong(l.split("\\s+")[1]);
                    }
                }
            }
        }
        return m;
    }
}
