package io.jccl.cli;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.bench.Bench;
import io.jccl.pipeline.AlgorithmSelector;
import io.jccl.pipeline.CostModel;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.File;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code jccl tune}: measures the cost model's parameters (see {@link CostModel}) for one transport and stores
 * them, so that AUTO picks algorithms from this machine's figures.
 */
@Command(name = "tune", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {
            "Measures the latency (alpha, us per step) and bandwidth (beta, us per byte) terms of AUTO's cost model "
                + "for a transport: the ring allreduce at a small and a large size for messages, and the "
                + "shared-memory allreduce for the shared arena (threads and shm). Writes them to the tuning file "
                + "(JCCL_TUNE_FILE, default ~/.jccl/tune.properties) and prints what AUTO then picks per size. A "
                + "communicator formed through a rendezvous (Jccl.fromEnvironment, Spark's) takes rank 0's file (or "
                + "the parameters rank 0's program gave) on every rank at its start, so only rank 0's host needs it; "
                + "one made otherwise, ranks as threads say, reads its own at its first AUTO call. Refused under JCCL_DETERMINISTIC=1, which runs those allreduces as ordered. "
                + "Progress, and the file written, go to stderr; stdout has the figures and AUTO's choices."})
public final class TuneCommand implements Callable<Integer> {
    @Option(names = "--transport", defaultValue = "shm", paramLabel = "threads|shm|tcp",
            converter = Options.Transport.class,
            description = "threads (one JVM), shm or tcp (a JVM per rank) (default: ${DEFAULT-VALUE}).")
    String transport;

    @Option(names = "--ranks", defaultValue = "4", description = "World size to measure with (default: ${DEFAULT-VALUE}).")
    int ranks;

    @Option(names = "--hosts", defaultValue = "1", description = "Measure the links of a multi-host job instead: "
            + "between hosts with one rank on each of this many simulated hosts of the test bed (needs root), over "
            + "TCP, and within a host with two shm ranks on this machine; writes them as the inter_host and intra_host "
            + "message parameters, which AUTO uses for the links between and within hosts; at most 16 "
            + "(default: ${DEFAULT-VALUE}, no bed).")
    int hosts;

    @Option(names = "--link", paramLabel = "RATE", description = "With --hosts: limit each host's link to RATE (tc "
            + "tbf, e.g. 1gbit).")
    String link;

    @Option(names = "--large", defaultValue = "16M", converter = Options.Size.class,
            description = "The large size, bytes with K/M/G suffixes, at most 8G less 36 bytes and what fits in "
                + "memory, as for jccl bench --sizes (default: ${DEFAULT-VALUE}).")
    long large;

    @Option(names = "--scale", defaultValue = "1.0", description = "Multiplies the iteration counts (default: ${DEFAULT-VALUE}).")
    double scale;

    @Option(names = "--choices", description = "Also run every algorithm AUTO could pick for allreduce, broadcast "
            + "and reduce at 4 B, 1 KiB, 64 KiB and 1 MiB, and record for each size the fastest, where the model's own "
            + "pick took more than 10% longer (else the model's pick), as measured choices in the tuning file: AUTO then "
            + "follows them on this transport and communicator size, from a quarter of 4 B to four times 1 MiB. For what the "
            + "model cannot see, such as more ranks than cores. Not with --hosts.")
    boolean choices;

    @Option(names = "--output", description = "The tuning file to write (default: JCCL_TUNE_FILE or ~/.jccl/tune.properties).")
    File output;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    private Progress progress;

    @Override
    public Integer call() throws Exception {
        Options.atLeast(spec, "--ranks", ranks, 2);
        Options.hosts(spec, hosts);
        if (!(scale > 0)) {
            throw Options.usage(spec, "Invalid value for option '--scale': " + scale + " (it must be above 0)");
        }
        if (choices && hosts > 1) {
            throw Options.usage(spec, "--choices measures the algorithms on one host: not with --hosts");
        }
        if (link != null && hosts < 2) {
            throw Options.usage(spec, "--link limits the links of the test bed: give --hosts 2 or more");
        }
        // an int cast made 16 GiB a buffer of 0 elements, and Infinity the beta written to the tuning file
        Options.fits(spec, "--large", large, OpType.ALL_REDUCE, hosts > 1 ? hosts : ranks,
                transport.equals("threads") && hosts < 2, hosts > 1 ? hosts : ranks);
        // deterministic mode ran the float32 ring and shared-memory allreduces measured as ORDERED, whose figures
        // went into the file as theirs
        io.jccl.JcclSettings settings = io.jccl.JcclSettings.fromEnvironment();
        String overridden = Options.overridden(OpType.ALL_REDUCE, Algorithm.RING, true, settings.deterministic());
        if (overridden != null) {
            throw Options.usage(spec, "jccl tune measures the float32 ring allreduce, but " + overridden + "; unset "
                    + io.jccl.JcclSettings.DETERMINISTIC_ENV + " for jccl tune (deterministic jobs read the figures "
                    + "it writes alike)");
        }
        // its directories are made now: they were after the measurements, which were lost when that failed; a run
        // that fails afterwards removes those it made (as bench does)
        List<Path> made = Options.output(spec, output != null ? "--output" : io.jccl.JcclSettings.TUNE_FILE_ENV,
                output != null ? output : settings.tuneFile().toFile(), true);
        boolean finished = false;
        try {
            progress = Progress.of("jccl tune");
            int status;
            if (hosts > 1) {
                transport = "tcp";
                ranks = hosts;
                try (io.jccl.launch.Bed bed = io.jccl.launch.Bed.up(hosts, 1, link)) {
                    status = tune(bed, settings);
                }
            } else {
                status = tune(null, settings);
            }
            finished = true;
            return status;
        } finally {
            if (!finished) {
                Options.removeMade(made);
            }
        }
    }

    private int tune(io.jccl.launch.Bed bed, io.jccl.JcclSettings settings) throws Exception {
        PrintStream out = System.out;
        Path file = output != null ? output.toPath() : settings.tuneFile();
        // a value that cannot be (an older jccl tune's Infinity) is dropped, so that tuning again repairs the file
        CostModel model = CostModel.load(file, why -> System.err.println("jccl tune: " + file + ": " + why
                + "; left out (the built-in figure stands until measured)"));
        // across hosts: the tcp link on the bed, then the messages within a host (two shm ranks on this machine;
        // the hierarchical algorithms' pipelined phases within a host use messages), each under its own name
        // (CostModel.INTER_HOST, INTRA_HOST), so one host's tcp and shm figures stay as they are
        boolean arena = bed == null && !transport.equals("tcp");
        int steps = bed != null || arena ? 2 : 1;
        model = measure(model, transport, bed != null ? CostModel.INTER_HOST : null, ranks, bed, arena, 0, steps, out,
                settings);
        if (bed != null) {
            model = measure(model, "shm", CostModel.INTRA_HOST, 2, null, false, 1, steps, out, settings);
        }
        String name = transport.equals("threads") ? "local" : transport;
        int arenaBytes = transport.equals("tcp") ? 0 : name.equals("shm") ? settings.shmArenaBytes()
                : settings.localArenaBytes();
        if (choices) {
            model = measureChoices(model, name, arenaBytes, out);
        }
        model.store(file, bed != null ? "jccl tune --hosts " + hosts + (link != null ? " --link " + link : "")
                : "jccl tune --transport " + transport + " --ranks " + ranks + (choices ? " --choices" : ""));
        progress.wrote(file);
        if (bed != null) { // what AUTO picks across hosts, two ranks on each: shared memory within, these between
            int[] hostOf = new int[2 * hosts];
            for (int r = 0; r < hostOf.length; r++) {
                hostOf[r] = r / 2;
            }
            printChoices(out, new AlgorithmSelector(model, new io.jccl.algorithm.Topology(hostOf.length, "shm+tcp",
                    false, false, 0, hostOf, null, settings.shmArenaBytes())), hostOf.length,
                    hosts + " hosts x 2 ranks (shm+tcp)");
            return 0;
        }
        printChoices(out, new AlgorithmSelector(model, name, arenaBytes, ranks), ranks, transport);
        return 0;
    }

    /**
     * {@code model} with measured choices ({@link CostModel#withChoice}) for allreduce, broadcast and reduce on this
     * transport ({@code name}) and world size: every algorithm that can run here, at 4 B, 1 KiB, 64 KiB and 1 MiB;
     * per size the fastest where the model's pick took more than 10% longer, else the model's pick (so noise between
     * near equals does not overrule it).
     */
    private CostModel measureChoices(CostModel model, String name, int arenaBytes, PrintStream out) throws Exception {
        long[] sizes = {4, 1 << 10, 64 << 10, 1 << 20};
        CostModel base = model.withoutChoices(name, ranks);
        AlgorithmSelector byModel = new AlgorithmSelector(base, name, arenaBytes, ranks);
        io.jccl.algorithm.Topology here = new io.jccl.algorithm.Topology(ranks, name, false, arenaBytes > 0,
                arenaBytes);
        BenchCommand bench = new BenchCommand();
        bench.name = "jccl tune";
        bench.ranks = ranks;
        bench.transport = transport;
        bench.scale = scale;
        CostModel result = base;
        out.printf("%nMeasured choices (%d ranks over %s), us per call:%n", ranks, transport);
        for (OpType op : new OpType[] {OpType.ALL_REDUCE, OpType.BROADCAST, OpType.REDUCE}) {
            java.util.Map<Algorithm, List<Bench.Row>> rows = new java.util.LinkedHashMap<>();
            for (io.jccl.algorithm.CollectiveAlgorithm a : io.jccl.algorithm.AlgorithmRegistry.standard()
                    .forOperation(op)) {
                if (a.unsupported(here) == null && a.algorithm() != Algorithm.ORDERED) {
                    progress.update(0, 1, "choices: " + op.label() + " " + a.algorithm());
                    rows.put(a.algorithm(), bench.measure(op, a.algorithm(), sizes));
                }
            }
            progress.clear();
            if (rows.size() < 2) {
                continue;
            }
            for (int i = 0; i < sizes.length; i++) {
                Algorithm best = null;
                for (java.util.Map.Entry<Algorithm, List<Bench.Row>> e : rows.entrySet()) {
                    if (best == null || e.getValue().get(i).medianUs < rows.get(best).get(i).medianUs) {
                        best = e.getKey();
                    }
                }
                Algorithm pick = byModel.choose(op, sizes[i]);
                double bestUs = rows.get(best).get(i).medianUs;
                List<Bench.Row> picked = rows.get(pick);
                Algorithm keep = picked == null || picked.get(i).medianUs > 1.1 * bestUs ? best : pick;
                result = result.withChoice(name, op, ranks, sizes[i], keep);
                out.printf(Locale.ROOT, "%-10s %8d B: fastest %s %.1f, the model's %s %s -> %s%n", op.label(), sizes[i],
                        best, bestUs, pick, picked == null ? "-" : String.format(Locale.ROOT, "%.1f",
                                picked.get(i).medianUs), keep);
            }
        }
        return result;
    }

    /**
     * {@code model} with the message parameters of {@code transport} on {@code p} ranks (on {@code bed}, or this
     * machine when null) from the ring allreduce at 4 bytes and {@link #large}, stored under {@code key} (null: the
     * transport's own name), and when {@code arena} the shared arena's from the shared-memory allreduce; progress
     * steps from {@code first} of {@code steps}.
     */
    private CostModel measure(CostModel model, String transport, String key, int p, io.jccl.launch.Bed bed,
                              boolean arena, int first, int steps, PrintStream out, io.jccl.JcclSettings settings)
            throws Exception {
        // the cost model's name of the transport, as communicators report it: local for threads
        String name = transport.equals("threads") ? "local" : transport;
        long big = large;
        long small = 4;
        BenchCommand bench = new BenchCommand();
        bench.name = "jccl tune";
        bench.ranks = p;
        bench.transport = transport;
        bench.scale = scale;
        bench.bed = bed;
        String where = bed != null ? "between hosts, " : hosts > 1 ? "within a host, " : "";
        progress.update(first, steps, where + "ring allreduce");
        List<Bench.Row> ring = bench.measure(OpType.ALL_REDUCE, Algorithm.RING, new long[] {small, big},
                b -> progress.update(first, steps, where + "ring allreduce, " + b + " bytes measured"));
        progress.step(first + 1, steps, where + "ring allreduce measured");
        progress.clear();
        double alpha = ring.get(0).medianUs / (2.0 * (p - 1));
        double beta = Math.max(1e-7, (ring.get(1).medianUs - 2.0 * (p - 1) * alpha)
                / (2.0 * ring.get(1).bytes * (p - 1) / p));
        model = model.with(key != null ? key : name, "link", alpha, beta);
        out.printf(Locale.ROOT, "%s%s messages (%d ranks): ring allreduce %d B %.1f us, %d B %.1f us -> %s.link alpha "
                + "%.2f us, beta %.6f us/B (%.2f GB/s)%n", where, transport, p, ring.get(0).bytes,
                ring.get(0).medianUs, ring.get(1).bytes, ring.get(1).medianUs, key != null ? key : name, alpha, beta,
                1e-3 / beta);
        if (arena) {
            progress.update(first + 1, steps, "shared-memory allreduce");
            List<Bench.Row> shared = bench.measure(OpType.ALL_REDUCE, Algorithm.SHARED_MEMORY,
                    new long[] {small, big}, b -> progress.update(first + 1, steps,
                            "shared-memory allreduce, " + b + " bytes measured"));
            progress.step(first + 2, steps, "shared-memory allreduce measured");
            progress.clear();
            double a = shared.get(0).medianUs;
            int arenaBytes = name.equals("shm") ? settings.shmArenaBytes() : settings.localArenaBytes();
            double syncs = 2 * Math.ceil((double) shared.get(1).bytes / arenaBytes);
            double b = Math.max(1e-7, (shared.get(1).medianUs - syncs * a) / (3.0 * shared.get(1).bytes));
            model = model.with(name, "arena", a, b);
            out.printf(Locale.ROOT, "%s shared arena: allreduce %d B %.1f us, %d B %.1f us -> alpha %.2f us, beta %.6f "
                    + "us/B (%.2f GB/s)%n", transport, shared.get(0).bytes, shared.get(0).medianUs, shared.get(1).bytes,
                    shared.get(1).medianUs, a, b, 1e-3 / b);
        }
        return model;
    }

    private static void printChoices(PrintStream out, AlgorithmSelector selector, int p, String where) {
        out.printf("%nAUTO on %d ranks over %s now picks:%n%12s", p, where, "bytes");
        OpType[] ops = {OpType.ALL_REDUCE, OpType.BROADCAST, OpType.ALL_GATHER, OpType.REDUCE_SCATTER};
        for (OpType op : ops) {
            out.printf(" %18s", op.label());
        }
        out.println();
        for (long bytes = 4; bytes <= (64L << 20); bytes *= 16) {
            out.printf("%12d", bytes);
            for (OpType op : ops) {
                out.printf(" %18s", selector.choose(op, op == OpType.ALL_GATHER || op == OpType.REDUCE_SCATTER
                        ? bytes / p : bytes));
            }
            out.println();
        }
    }
}
