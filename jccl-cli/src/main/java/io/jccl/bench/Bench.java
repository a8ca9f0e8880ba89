package io.jccl.bench;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.DataType;
import io.jccl.Communicator;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The measuring loop, run by every rank (a barrier before each call, as OSU's and the peers' harnesses; nccl-tests
 * times calls back to back): warm-up (the same loop, on every measured size up to 64 KiB, then passes of it until
 * no rank's JIT compiles anything), then for each timed iteration a barrier, the clock, one collective, the clock;
 * the per-iteration time is the maximum over ranks (one allreduce MAX of all iterations at the end), and a size's
 * time is the median over iterations. Float32, SUM. Every timed call's result is checked exactly, outside the
 * timing (#wrong: the wrong elements of all of them): each rank's input differs by rank and element ({@link #input},
 * small integers whose sums float32 holds exactly in any order), and an output that is not also the input is filled
 * with NaN before each call, so that a block in the wrong place, or a call that returned before it wrote its
 * output, counts.
 */
public final class Bench {
    private Bench() {
    }

    /** The collectives the benchmark runs, in this order, with their names in rows and for the peers (torch's). */
    private static final Map<OpType, String> LABELS = new LinkedHashMap<>();

    static {
        LABELS.put(OpType.ALL_REDUCE, "all_reduce");
        LABELS.put(OpType.BROADCAST, "broadcast");
        LABELS.put(OpType.ALL_GATHER, "all_gather");
        LABELS.put(OpType.REDUCE_SCATTER, "reduce_scatter");
        LABELS.put(OpType.ALL_TO_ALL, "all_to_all");
        LABELS.put(OpType.REDUCE, "reduce");
    }

    /** The collectives the benchmark runs. */
    public static final List<OpType> OPS = List.copyOf(LABELS.keySet());

    /** {@code op}'s name in rows, the JSON and the peers' harnesses: {@code all_reduce}, ... */
    public static String label(OpType op) {
        String label = LABELS.get(op);
        if (label == null) {
            throw new IllegalArgumentException("not a collective the benchmark runs: " + op);
        }
        return label;
    }

    /** {@code op}'s name on the command line: {@code allreduce}, ... */
    public static String cliName(OpType op) {
        return label(op).replace("_", "");
    }

    /** busbw = algbw x this factor (nccl-tests). */
    public static double busFactor(OpType op, int n) {
        switch (op) {
            case ALL_REDUCE: return 2.0 * (n - 1) / n;
            case ALL_GATHER:
            case REDUCE_SCATTER:
            case ALL_TO_ALL: return (double) (n - 1) / n;
            default: return 1.0;
        }
    }

    /** The collective named {@code s} on the command line, any case, with or without underscores and dashes. */
    public static OpType parse(String s) {
        String n = s.trim().toLowerCase(Locale.ROOT).replace("_", "").replace("-", "");
        for (OpType o : OPS) {
            if (cliName(o).equals(n)) {
                return o;
            }
        }
        throw new IllegalArgumentException("unknown op '" + s + "': allreduce, broadcast, allgather, "
                + "reducescatter, alltoall, reduce");
    }

    /** One measured row. */
    public static final class Row {
        public final OpType op;
        public final String algorithm;
        public final long bytes;
        public final long count;
        public final int world;
        public final double medianUs;
        public final long wrong;
        public final double cpuSecondsPerOp;
        /** Median time of the in-place variant (allgather, reduce_scatter), NaN where the op has none. */
        public final double inPlaceUs;
        /**
         * Where the row is the median of several runs ({@link #medianOfRuns}): each run's median time, in the order
         * they ran; else null.
         */
        public final double[] runsUs;
        /**
         * Nanoseconds per round trip of a cache line between rank 0's and rank 1's cores just before the row was
         * timed ({@link CoreRoundTrip}; the median of the runs' where the row is several runs'), NaN where not
         * measured.
         */
        public final double coreRoundTripNs;

        public Row(OpType op, String algorithm, long bytes, long count, int world, double medianUs, long wrong,
                   double cpuSecondsPerOp, double inPlaceUs) {
            this(op, algorithm, bytes, count, world, medianUs, wrong, cpuSecondsPerOp, inPlaceUs, null, Double.NaN);
        }

        public Row(OpType op, String algorithm, long bytes, long count, int world, double medianUs, long wrong,
                   double cpuSecondsPerOp, double inPlaceUs, double[] runsUs, double coreRoundTripNs) {
            this.runsUs = runsUs;
            this.coreRoundTripNs = coreRoundTripNs;
            this.inPlaceUs = inPlaceUs;
            this.op = op;
            this.algorithm = algorithm;
            this.bytes = bytes;
            this.count = count;
            this.world = world;
            this.medianUs = medianUs;
            this.wrong = wrong;
            this.cpuSecondsPerOp = cpuSecondsPerOp;
        }

        public double algbw() {
            return bytes / (medianUs * 1e-6) / 1e9;
        }

        public double busbw() {
            return algbw() * busFactor(op, world);
        }
    }

    /** Warm-up and timed iterations for a size, scaled as the peers' harness scales them. */
    public static int[] iterations(long bytes, double scale) {
        int warm;
        int iters;
        if (bytes <= 64 << 10) {
            warm = 50;
            iters = 300;
        } else if (bytes <= 1 << 20) {
            warm = 10;
            iters = 100;
        } else if (bytes <= 16 << 20) {
            warm = 3;
            iters = 20;
        } else {
            warm = 2;
            iters = 10;
        }
        return new int[] {Math.max(1, (int) (warm * scale)), Math.max(3, (int) (iters * scale))};
    }

    /**
     * This rank's part of the benchmark of {@code op} at every size (bytes of the full buffer, nccl-tests' sense);
     * returns the rows (identical on every rank).
     */
    public static List<Row> run(Communicator comm, OpType op, Algorithm algorithm, long[] sizes, double scale) {
        return run(comm, op, algorithm, sizes, scale, false);
    }

    /**
     * As {@link #run(Communicator, OpType, Algorithm, long[], double)}; with {@code registered}, the buffers come from
     * {@link Communicator#allocate} (filled and read back outside the timed region; allgather and reduce_scatter then
     * only out of place).
     */
    public static List<Row> run(Communicator comm, OpType op, Algorithm algorithm, long[] sizes, double scale,
                                boolean registered) {
        return run(comm, op, algorithm, sizes, scale, registered, false, null);
    }

    /**
     * As {@link #run(Communicator, OpType, Algorithm, long[], double, boolean)}; {@code sizeDone}, unless null, is
     * given the bytes of each size as soon as its row is measured (for a progress line); with {@code coreRoundTrip}
     * (the same on every rank), each row also has the round trip between rank 0's and rank 1's cores measured just
     * before it ({@link CoreRoundTrip}).
     */
    public static List<Row> run(Communicator comm, OpType op, Algorithm algorithm, long[] sizes, double scale,
                                boolean registered, boolean coreRoundTrip, java.util.function.LongConsumer sizeDone) {
        return run(comm, op, algorithm, sizes, scale, registered, CoreRoundTrip.open(comm, coreRoundTrip), sizeDone);
    }

    private static List<Row> run(Communicator comm, OpType op, Algorithm algorithm, long[] sizes, double scale,
                                 boolean registered, CoreRoundTrip rtt, java.util.function.LongConsumer sizeDone) {
        boolean reg = registered;
        List<Row> rows = new ArrayList<>();
        int n = comm.size();
        CollectiveOptions opts = CollectiveOptions.DEFAULT.withAlgorithm(
                Algorithm.available(op).contains(algorithm) ? algorithm : Algorithm.AUTO);
        // CPU of the whole process (caller, transport readers, GC, JIT): a transport that moves work off the calling
        // thread must not look cheaper for it; ranks that are threads share one process, so their CPU is split. Only
        // rank 0's is reported, and only rank 0 reads it
        ProcessCpu cpuClock = new ProcessCpu();
        int sharing = comm.transportName().equals("local") ? n : 1;
        // warm the JIT on the whole path before the first measured size, so that it is not charged to it: C2
        // compiles a method after about 10,000 calls, and a native peer needs no warm-up. On every measured size up
        // to 64 KiB and a middling one, each with the row's own element count: a size first met in its row makes
        // the JIT recompile the path during it (a 4-byte allreduce, one element, came out at 2.7-3.8 us after a
        // warm-up on two elements and 1 KiB, and at 0.9-1.5 us after one on its own size), and with the calls that
        // end every row (doubles and longs), which would do the same between rows (docs/performance.md); and, for
        // the rows above 64 KiB, on 128 KiB with the algorithm each of them runs, whose code there may be other than
        // at 64 KiB and below (on the 2 x 2 bed AUTO's 1 MiB allreduce, the ring, took 7.3-13 ms after a warm-up
        // that ran only the small sizes' hierarchical regime, against 1.9-2.8 ms for the ring warmed on its own code)
        List<Integer> warmUps = new ArrayList<>(); // element counts
        List<CollectiveOptions> warmOpts = new ArrayList<>();
        warmUps.add(n * Math.max(1, 256 / n));
        warmOpts.add(opts);
        for (long bytes : sizes) {
            if (bytes <= 64 << 10) {
                warmUps.add(rowCount(op, bytes, n));
                warmOpts.add(opts);
            }
        }
        java.util.Set<Algorithm> larger = new java.util.LinkedHashSet<>();
        for (long bytes : sizes) {
            if (bytes > 64 << 10) {
                larger.add(opts.algorithm() != Algorithm.AUTO ? opts.algorithm() : autoChoice(comm, op, bytes));
            }
        }
        for (Algorithm a : larger) {
            warmUps.add(rowCount(op, 128 << 10, n));
            warmOpts.add(CollectiveOptions.DEFAULT.withAlgorithm(a));
        }
        // with registered buffers on those (direct memory on TCP): code warmed on arrays alone is recompiled, and
        // the JIT's threads charged, during the first registered rows
        boolean inPlace = !reg && (op == OpType.ALL_GATHER || op == OpType.REDUCE_SCATTER);
        List<Sample> warm = new ArrayList<>();
        for (int k = 0; k < warmUps.size(); k++) {
            // as many iterations as the size's row has, so that agreeing on the times is the rows' call too
            int length = warmUps.get(k);
            warm.add(new Sample(comm, length, iterations(4L * length, scale)[1], reg, inPlace));
        }
        // the warm-up runs the rows' own loop (measure), in chunks of a row's iterations on the same arrays, as a
        // row's calls are: a call on the tensors of the call before takes another path through the pipeline (the
        // prepared call's kept staging window) than a call on others (2-rank 4 B allreduce over shm: 0.72-0.98 us
        // after a warm-up that only alternated, against 0.50-0.57), and the loop's own code (the fill, the CPU clock)
        // first met in the first row was compiled during it, on the core of a rank bound to one (1.2-1.5 us against
        // 0.45-0.6 in 2 of 5 runs; docs/performance.md)
        for (int calls = 0, k = 0; calls < Math.max(100, (int) (20_000 * scale)); k = (k + 1) % warm.size()) {
            measure(comm, op, warmOpts.get(k), warm.get(k), 0, cpuClock);
            agree(comm, warm.get(k).times, new long[1]);
            calls += warm.get(k).times.length;
        }
        // then until no rank's JIT compiled anything during a pass over the warm-up sizes (at most QUIET_PASSES):
        // a compile still queued runs on the core of the rank it belongs to, and a row measured meanwhile waits for it
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        boolean timesJit = jit != null && jit.isCompilationTimeMonitoringSupported();
        for (int pass = 0; pass < QUIET_PASSES && timesJit; pass++) {
            long before = jit.getTotalCompilationTime();
            for (int k = 0; k < warm.size(); k++) {
                measure(comm, op, warmOpts.get(k), warm.get(k), 0, cpuClock);
            }
            long[] compiled = {jit.getTotalCompilationTime() != before ? 1 : 0};
            comm.allReduce(Tensor.of(compiled), ReduceOp.MAX);
            if (compiled[0] == 0) {
                break;
            }
        }
        for (long bytes : sizes) {
            int count = rowCount(op, bytes, n);
            int[] it = iterations(4L * count, scale);
            Sample row = new Sample(comm, count, it[1], reg, inPlace);
            double coreNs = rtt.measure(); // after the row's arrays are made: the nearest to its timed calls
            double cpu = measure(comm, op, opts, row, it[0], cpuClock);
            long[] excluded = {row.excluded};
            if (sharing > 1) { // ranks that are threads: every rank's refills and checks are this process's CPU
                comm.allReduce(Tensor.of(excluded), ReduceOp.SUM);
            }
            float[] a = row.a;
            float[] b = row.b;
            Tensor shared = row.shared;
            Tensor sharedOut = row.sharedOut;
            float[] ia = row.ia;
            int block = row.block;
            double[] times = row.times;
            double[] inTimes = row.inTimes;
            double cpuSeconds = cpuPerCall(cpu, excluded[0], it[1], sharing);
            long wrong = row.wrong;
            double inPlaceMedian = Double.NaN;
            if (inPlace) {
                comm.allReduce(Tensor.of(inTimes), ReduceOp.MAX);
                inPlaceMedian = median(inTimes);
            }
            long[] w = {wrong};
            agree(comm, times, w);
            double median = median(times);
            String algoName = opts.algorithm() != Algorithm.AUTO ? opts.algorithm().name()
                    : "AUTO:" + autoChoice(comm, op, bytes).name();
            rows.add(new Row(op, algoName + (reg ? "+reg" : ""), 4L * count, count, n, median, w[0], cpuSeconds,
                    inPlaceMedian, null, coreNs));
            if (sizeDone != null) {
                sizeDone.accept(bytes);
            }
        }
        return rows;
    }

    /** What AUTO runs for a row of {@code bytes} (the signature's count: the block for allgather, reduce_scatter). */
    private static Algorithm autoChoice(Communicator comm, OpType op, long bytes) {
        int count = rowCount(op, bytes, comm.size());
        boolean whole = op == OpType.ALL_REDUCE || op == OpType.BROADCAST || op == OpType.REDUCE
                || op == OpType.ALL_TO_ALL;
        return comm.algorithmFor(op, DataType.FLOAT32, whole ? count : count / comm.size());
    }

    /**
     * The most float32 elements a row's buffer may have: the longest array the JDK itself promises to allocate
     * ({@code Integer.MAX_VALUE - 8}, its {@code ArraysSupport.SOFT_MAX_ARRAY_LENGTH}), so rows up to 8 GiB - 36
     * bytes.
     */
    public static final long MAX_COUNT = Integer.MAX_VALUE - 8;

    /**
     * The float32 elements of the full buffer of a row of {@code bytes}: at least one; for the collectives that
     * split the buffer into {@code n} blocks, a multiple of {@code n}. More than {@link #MAX_COUNT} cannot be run.
     */
    public static long elements(OpType op, long bytes, int n) {
        long count = Math.max(1, bytes / 4);
        if (op != OpType.ALL_REDUCE && op != OpType.BROADCAST && op != OpType.REDUCE) {
            count = Math.max(n, (count + n - 1) / n * n);
        }
        return count;
    }

    /**
     * The heap, MiB, a rank's process needs for rows of at most {@code count} float32 elements: its input, output and
     * in-place arrays (three per row, {@link Sample}) and 256 MiB besides; at least 1 GiB.
     */
    public static long heapMiB(long count) {
        return Math.max(1024, (arrayBytes(count) >> 20) + 256);
    }

    /** The bytes of a rank's arrays for rows of at most {@code count} float32 elements: three arrays of them. */
    public static long arrayBytes(long count) {
        return 12 * count;
    }

    /** {@link #heapMiB} as a {@code -Xmx} value: {@code 1024m}. */
    public static String heap(long count) {
        return heapMiB(count) + "m";
    }

    /** {@link #elements}, which must be at most {@link #MAX_COUNT}: the commands check their sizes first. */
    private static int rowCount(OpType op, long bytes, int n) {
        long count = elements(op, bytes, n);
        if (count > MAX_COUNT) { // an int cast made 16 GiB a row of 0 elements, and 8 GiB a negative array size
            throw new IllegalArgumentException(bytes + " bytes are " + count + " float32 elements, more than a Java "
                    + "array holds (" + MAX_COUNT + ")");
        }
        return (int) count;
    }

    /** At most this many passes over the warm-up sizes until no rank's JIT compiled anything during one. */
    private static final int QUIET_PASSES = 20;

    /** One size's arrays (or registered buffers) and iteration times, for {@link #measure}. */
    private static final class Sample {
        final float[] a;
        final float[] b;
        final float[] ia; // in place (allgather, reduce_scatter), or null
        final Tensor shared;
        final Tensor sharedOut;
        final int block;
        final double[] times;
        final double[] inTimes;
        /** This rank's input ({@link #input}), copied into {@link #a} before each call. */
        final float[] input;
        /** Wrong elements of the timed calls' results, this rank's. */
        long wrong;
        /** This rank's thread's CPU in the timed iterations' refills, checks and the barriers before them. */
        long excluded;

        Sample(Communicator comm, int count, int iterations, boolean registered, boolean inPlace) {
            input = new float[count];
            for (int i = 0; i < count; i++) {
                input[i] = input(comm.rank(), i);
            }
            a = new float[count];
            b = new float[count];
            ia = inPlace ? new float[count] : null;
            shared = registered ? comm.allocate(DataType.FLOAT32, count) : null;
            sharedOut = registered ? comm.allocate(DataType.FLOAT32, count) : null;
            block = count / comm.size();
            times = new double[iterations];
            inTimes = new double[inPlace ? iterations : 0];
        }
    }

    /**
     * The measuring loops of one size: {@code warm} untimed iterations, then {@code s.times.length} timed ones, each:
     * the input refilled (and the output filled with NaN), barrier, the call, and (timed iterations) a barrier and
     * the result checked into {@code s.wrong}; then, where {@code s.ia} is given, the same for the call in place (its own loop: the two do not
     * share the caches). Returns the CPU time of this process ({@code cpuClock}) over the timed calls of the first
     * loop and the barriers before them: the clock is read before the first timed iteration and after the last,
     * never inside one (a reading of every thread's count takes longer than a small call), and the refills and
     * the checks with their barriers are taken out, by the calling thread's own CPU clock times {@code refillers} (the ranks that are threads
     * of this process do them alike). The warm-up runs these same loops, so that the JIT has
     * compiled all of them before the first row.
     */
    private static double measure(Communicator comm, OpType op, CollectiveOptions opts, Sample s, int warm,
                                  ProcessCpu cpuClock) {
        int r = comm.rank();
        java.lang.management.ThreadMXBean thread = java.lang.management.ManagementFactory.getThreadMXBean();
        boolean counting = r == 0 && s.times.length > 0;
        long refill = 0;
        int written = outputElements(op, s.block, comm.size());
        for (int i = -warm; i < s.times.length; i++) {
            if (i == 0 && counting) {
                cpuClock.start();
            }
            long f0 = i >= 0 ? thread.getCurrentThreadCpuTime() : 0;
            // the output the call writes NaN first, the input last: the input is the last thing written before the
            // call, as before the check (a whole-buffer NaN fill after the input left the input colder)
            Arrays.fill(s.b, 0, written, Float.NaN);
            System.arraycopy(s.input, 0, s.a, 0, s.a.length);
            if (s.shared != null) {
                copy(s.a, s.shared, true);
                if (separateOutput(op)) {
                    copy(s.b, s.sharedOut, true);
                }
            }
            if (i >= 0) {
                refill += thread.getCurrentThreadCpuTime() - f0;
            }
            long nanos = timed(comm, op, opts, s.a, s.b, s.block, s.shared, s.sharedOut);
            if (i >= 0) {
                s.times[i] = nanos / 1e3;
                long g0 = thread.getCurrentThreadCpuTime();
                // every rank out of the call before any checks or refills: on ranks that outnumber the cores, that
                // work took its time from the ranks still in the call, and their time is the one measured
                comm.barrier();
                if (s.shared != null) {
                    copy(s.a, s.shared, false);
                    if (separateOutput(op)) {
                        copy(s.b, s.sharedOut, false);
                    }
                }
                s.wrong += check(comm, op, s.a, s.b, s.block);
                refill += thread.getCurrentThreadCpuTime() - g0;
            }
        }
        double cpu = counting ? cpuClock.since() : Double.NaN;
        s.excluded = refill;
        if (s.ia != null) {
            for (int i = -warm; i < s.inTimes.length; i++) {
                // allgather and reduce_scatter also in place, as NCCL defines it: the input is this rank's block of
                // the output (allgather; the others' blocks NaN until written), the output this rank's block of the
                // input (reduce_scatter)
                if (op == OpType.ALL_GATHER) {
                    Arrays.fill(s.ia, Float.NaN);
                    System.arraycopy(s.input, 0, s.ia, r * s.block, s.block);
                } else {
                    System.arraycopy(s.input, 0, s.ia, 0, s.ia.length);
                }
                comm.barrier();
                long t2 = System.nanoTime();
                if (op == OpType.ALL_GATHER) {
                    comm.allGather(Tensor.of(s.ia, r * s.block, s.block), Tensor.of(s.ia), opts);
                } else {
                    comm.reduceScatter(Tensor.of(s.ia), Tensor.of(s.ia, r * s.block, s.block), ReduceOp.SUM, opts);
                }
                long t3 = System.nanoTime();
                if (i >= 0) {
                    s.inTimes[i] = (t3 - t2) / 1e3;
                    comm.barrier(); // as above
                    s.wrong += check(comm, op, s.a, op == OpType.ALL_GATHER ? s.ia
                            : Arrays.copyOfRange(s.ia, r * s.block, (r + 1) * s.block), s.block);
                }
            }
        }
        return cpu;
    }

    /**
     * What every row ends with, on every rank alike: each iteration's time becomes the maximum over ranks, the count
     * of wrong elements the sum.
     */
    private static void agree(Communicator comm, double[] times, long[] wrong) {
        comm.allReduce(Tensor.of(times), ReduceOp.MAX);
        comm.allReduce(Tensor.of(wrong), ReduceOp.SUM);
    }

    /**
     * Several runs of one algorithm's rows (the same sizes, in the same order) as one row per size: the median of the
     * runs' median times (and of their in-place times and CPU), the wrong results of all runs, each run's time kept
     * in {@link Row#runsUs}. The algorithm is the first run's (AUTO's choice is the cost model's, the same in every
     * run).
     */
    public static List<Row> medianOfRuns(List<List<Row>> runs) {
        List<Row> first = runs.get(0);
        if (runs.size() == 1) {
            return first;
        }
        List<Row> out = new ArrayList<>();
        for (int i = 0; i < first.size(); i++) {
            double[] t = new double[runs.size()];
            double[] inPlace = new double[runs.size()];
            double[] cpu = new double[runs.size()];
            double[] rtt = new double[runs.size()];
            long wrong = 0;
            for (int k = 0; k < runs.size(); k++) {
                Row r = runs.get(k).get(i);
                if (r.bytes != first.get(i).bytes) {
                    throw new IllegalArgumentException("runs of different sizes: " + r.bytes + " and "
                            + first.get(i).bytes);
                }
                t[k] = r.medianUs;
                inPlace[k] = r.inPlaceUs;
                cpu[k] = r.cpuSecondsPerOp;
                rtt[k] = r.coreRoundTripNs;
                wrong += r.wrong;
            }
            Row f = first.get(i);
            double[] resolved = Arrays.stream(cpu).filter(c -> !Double.isNaN(c)).toArray(); // NaN: under the clock
            out.add(new Row(f.op, f.algorithm, f.bytes, f.count, f.world, median(t), wrong,
                    resolved.length == 0 ? Double.NaN : median(resolved),
                    Double.isNaN(f.inPlaceUs) ? Double.NaN : median(inPlace), t, medianOfMeasured(rtt)));
        }
        return out;
    }

    /** How far apart two rows' core round trips may be before their ratio compares placements ({@link CoreRoundTrip}). */
    public static final double PLACEMENT_SPREAD = 1.5;

    /** Whether both round trips were measured and lie more than {@link #PLACEMENT_SPREAD} apart. */
    public static boolean placementsDiffer(double ns, double otherNs) {
        return !Double.isNaN(ns) && !Double.isNaN(otherNs)
                && Math.max(ns, otherNs) > PLACEMENT_SPREAD * Math.min(ns, otherNs);
    }

    /** The median of the values that are not NaN; NaN if none is. */
    public static double medianOfMeasured(double[] values) {
        double[] measured = Arrays.stream(values).filter(v -> !Double.isNaN(v)).toArray();
        return measured.length == 0 ? Double.NaN : median(measured);
    }

    /** Each size's median over several runs of a peer's times (the same sizes in each). */
    public static double[] medianOfRuns(double[][] runs) {
        double[] out = new double[runs[0].length];
        for (int i = 0; i < out.length; i++) {
            double[] t = new double[runs.length];
            for (int k = 0; k < runs.length; k++) {
                t[k] = runs[k][i];
            }
            out[i] = median(t);
        }
        return out;
    }

    /**
     * AUTO's row against the fastest explicit row of the same size, one line per size: {@code auto} is AUTO's rows,
     * {@code explicit} the rows of every explicitly named algorithm, all over the same sizes in the same order.
     * Each line gives the size, AUTO's time over the best explicit time (1.00: AUTO picked as well as the best; in
     * one run the same code differs by the run's noise), AUTO's choice and the best algorithm; where AUTO chose
     * another algorithm than the fastest and that algorithm has an explicit row, that row's time over the fastest
     * too (how far the choice itself is from the best: AUTO's row and its choice's row measure the same code at
     * different moments), e.g. {@code "#        65536  1.26  AUTO:RING, best BRUCK 179.12 us; RING's row 1.20"}.
     * No lines without both kinds of rows.
     */
    public static List<String> autoAgainstBest(List<Row> auto, List<List<Row>> explicit) {
        List<String> lines = new ArrayList<>();
        if (auto == null || explicit.isEmpty()) {
            return lines;
        }
        for (int i = 0; i < auto.size(); i++) {
            Row best = null;
            for (List<Row> rows : explicit) {
                Row r = rows.get(i);
                if (r.bytes != auto.get(i).bytes) {
                    throw new IllegalArgumentException("rows of different sizes: " + r.bytes + " and "
                            + auto.get(i).bytes);
                }
                if (best == null || r.medianUs < best.medianUs) {
                    best = r;
                }
            }
            String chosen = auto.get(i).algorithm.replaceFirst("^AUTO:", "");
            String own = "";
            for (List<Row> rows : explicit) {
                Row r = rows.get(i);
                if (r != best && r.algorithm.equals(chosen)) {
                    own = String.format(Locale.ROOT, "; %s's row %.2f", chosen, r.medianUs / best.medianUs);
                }
            }
            lines.add(String.format(Locale.ROOT, "# %12d %5.2f  %s, best %s %.2f us%s", auto.get(i).bytes,
                    auto.get(i).medianUs / best.medianUs, auto.get(i).algorithm, best.algorithm, best.medianUs, own));
        }
        return lines;
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /**
     * Rank 0 arrives {@code seconds} late at an allreduce while the others wait in it: returns {the largest share
     * of a core any waiting rank's thread used meanwhile, the wall seconds of the wait} (the same on every rank).
     */
    public static double[] latePeer(Communicator comm, double seconds) throws InterruptedException {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        float[] x = new float[1];
        comm.allReduce(Tensor.of(x), ReduceOp.SUM);
        comm.barrier();
        long w0 = System.nanoTime();
        long c0 = threads.getCurrentThreadCpuTime();
        if (comm.rank() == 0) {
            Thread.sleep((long) (seconds * 1000));
        }
        comm.allReduce(Tensor.of(x), ReduceOp.SUM);
        double wall = (System.nanoTime() - w0) / 1e9;
        double cpu = (threads.getCurrentThreadCpuTime() - c0) / 1e9;
        double[] r = {comm.rank() == 0 ? 0 : cpu / wall, wall};
        comm.allReduce(Tensor.of(r), ReduceOp.MAX);
        return r;
    }

    /** Copies {@code a} into a tensor from {@link Communicator#allocate} ({@code in}), or back out of it. */
    private static void copy(float[] a, Tensor t, boolean in) {
        if (!t.isBuffer()) {
            if (in) {
                System.arraycopy(a, 0, t.array(), t.offset(), a.length);
            } else {
                System.arraycopy(t.array(), t.offset(), a, 0, a.length);
            }
            return;
        }
        java.nio.FloatBuffer f = t.byteBuffer().asFloatBuffer();
        if (in) {
            f.put(a);
        } else {
            f.get(a);
        }
    }

    /**
     * One timed call: a barrier, then the call between two clock readings; returns the nanoseconds between them
     * ({@code shared}, {@code sharedOut}: on these tensors from {@code allocate} instead of {@code a}, {@code b}). A method of its own, which the warm-up calls too,
     * so that the JIT has compiled it when rows are timed: the loops of {@link #run} stay interpreted (too few
     * iterations for an on-stack compilation; the JIT log of a worker shows no compilation of it), as Open MPI's
     * harness, compiled C, does not. Three alternating runs could not tell it from before (2-rank 4 B-1 KiB rows).
     */
    private static long timed(Communicator comm, OpType op, CollectiveOptions o, float[] a, float[] b, int block,
                              Tensor shared, Tensor sharedOut) {
        comm.barrier();
        long t0 = System.nanoTime();
        if (shared != null) {
            runOnce(comm, op, o, shared, sharedOut, block);
        } else {
            runOnce(comm, op, o, Tensor.of(a), Tensor.of(b), block);
        }
        return System.nanoTime() - t0;
    }

    private static void runOnce(Communicator comm, OpType op, CollectiveOptions o, Tensor a, Tensor b, int block) {
        switch (op) {
            case ALL_REDUCE: comm.allReduce(a, ReduceOp.SUM, o); break;
            case BROADCAST: comm.broadcast(a, 0, o); break;
            case ALL_GATHER: comm.allGather(head(a, block), b, o); break;
            case REDUCE_SCATTER: comm.reduceScatter(a, head(b, block), ReduceOp.SUM, o); break;
            case ALL_TO_ALL: comm.allToAll(a, b, o); break;
            case REDUCE: comm.reduce(a, 0, ReduceOp.SUM, o); break;
            default: throw new AssertionError(op);
        }
    }

    /** The first {@code n} elements of {@code t}. */
    private static Tensor head(Tensor t, int n) {
        if (!t.isBuffer()) {
            return Tensor.ofArray(t.dtype(), t.array(), t.offset(), n);
        }
        java.nio.ByteBuffer b = t.byteBuffer();
        b.limit(b.position() + n * t.dtype().sizeBytes());
        return Tensor.of(b, t.dtype());
    }

    /** Rank {@code r}'s input at element {@code i}: (r + 1)(1 + i mod 251), exact, as every sum of them to 365 ranks. */
    static float input(int r, int i) {
        return (r + 1) * (float) (1 + i % 251);
    }

    /** Whether {@code op}'s output is another buffer than its input (filled with NaN before each call). */
    private static boolean separateOutput(OpType op) {
        return op == OpType.ALL_GATHER || op == OpType.REDUCE_SCATTER || op == OpType.ALL_TO_ALL;
    }

    /** The elements of the output buffer that {@code op} writes (0: it writes its input). */
    private static int outputElements(OpType op, int block, int n) {
        return op == OpType.REDUCE_SCATTER ? block : separateOutput(op) ? n * block : 0;
    }

    /**
     * CPU seconds per call of rank 0's process: {@code cpu} (the process's CPU nanoseconds over the timed loop,
     * {@link ProcessCpu#since}; NaN where no clock resolves it, shown "-") less {@code excluded} (the harness's refills
     * and checks), over {@code iterations} calls and the {@code sharing} ranks that are threads of it.
     */
    static double cpuPerCall(double cpu, long excluded, int iterations, int sharing) {
        if (Double.isNaN(cpu) || iterations < 1) {
            return Double.NaN;
        }
        return Math.max(0, cpu - excluded) / 1e9 / iterations / sharing;
    }

    /**
     * Elements of this rank's result that are not exactly what the inputs ({@link #input}) imply. Without a division
     * per element ({@code i mod 251} is stepped): a check as slow as the call it checks, on ranks that outnumber the
     * cores, took their time from the ranks still in the call.
     */
    static long check(Communicator comm, OpType op, float[] a, float[] b, int block) {
        int n = comm.size();
        int r = comm.rank();
        float ranks = n * (n + 1) / 2f; // the sum over the ranks of (r + 1)
        switch (op) {
            case ALL_REDUCE:
                return countWrong(a, 0, a.length, 0, ranks);
            case REDUCE:
                return r == 0 ? countWrong(a, 0, a.length, 0, ranks) : 0;
            case BROADCAST:
                return countWrong(a, 0, a.length, 0, 1);
            case ALL_GATHER: { // block j is rank j's first block
                long wrong = 0;
                for (int j = 0; j < n; j++) {
                    wrong += countWrong(b, j * block, block, 0, j + 1);
                }
                return wrong;
            }
            case ALL_TO_ALL: { // block j is rank j's block r
                long wrong = 0;
                for (int j = 0; j < n; j++) {
                    wrong += countWrong(b, j * block, block, (int) ((long) r * block % 251), j + 1);
                }
                return wrong;
            }
            case REDUCE_SCATTER:
                return countWrong(b, 0, block, (int) ((long) r * block % 251), ranks);
            default:
                throw new AssertionError(op);
        }
    }

    /**
     * Elements of {@code x[from, from + count)} other than {@code scale} (1 + k), k stepping from {@code k0} through
     * 0..250: {@link #input}'s pattern, times a rank's {@code r + 1} or the sum of them.
     */
    private static long countWrong(float[] x, int from, int count, int k0, float scale) {
        long wrong = 0;
        int k = k0;
        for (int i = from; i < from + count; i++) {
            wrong += x[i] == scale * (1 + k) ? 0 : 1;
            k = k == 250 ? 0 : k + 1;
        }
        return wrong;
    }

    /**
     * DDP's bucketing primitive, measured: {@code tensors} float32 tensors of {@code elements} each, allreduced
     * one call each and then as one coalesced call. Returns {median us per call-each round, median us coalesced}.
     */
    public static double[] coalesced(Communicator comm, int tensors, int elements, int iterations) {
        List<float[]> arrays = new ArrayList<>();
        List<Tensor> list = new ArrayList<>();
        for (int i = 0; i < tensors; i++) {
            float[] a = new float[elements];
            arrays.add(a);
            list.add(Tensor.of(a));
        }
        double[] each = new double[iterations];
        double[] once = new double[iterations];
        for (int it = -1; it < iterations; it++) {
            comm.barrier();
            long t0 = System.nanoTime();
            for (Tensor t : list) {
                comm.allReduce(t, ReduceOp.SUM);
            }
            long t1 = System.nanoTime();
            comm.barrier();
            long t2 = System.nanoTime();
            comm.allReduceCoalesced(list, ReduceOp.SUM);
            long t3 = System.nanoTime();
            if (it >= 0) {
                each[it] = (t1 - t0) / 1e3;
                once[it] = (t3 - t2) / 1e3;
            }
        }
        comm.allReduce(Tensor.of(each), ReduceOp.MAX);
        comm.allReduce(Tensor.of(once), ReduceOp.MAX);
        Arrays.sort(each);
        Arrays.sort(once);
        return new double[] {each[iterations / 2], once[iterations / 2]};
    }
}
