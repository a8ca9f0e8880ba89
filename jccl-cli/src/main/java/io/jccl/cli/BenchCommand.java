package io.jccl.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.jccl.Algorithm;
import io.jccl.Jccl;
import io.jccl.OpType;
import io.jccl.bench.Bench;
import io.jccl.launch.ProcessTree;
import io.jccl.launch.WorkDir;
import io.jccl.verify.GlooReference;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogarithmicAxis;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.File;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/** {@code jccl bench}: nccl-tests-style benchmark, with gloo measured in the same run. */
@Command(name = "bench", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {
            "Measures collectives in nccl-tests' form: size, count, type, redop, root, time, algbw, busbw, #wrong "
                + "(GB = 1e9; busbw = algbw x 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and "
                + "all_to_all, 1 for broadcast and reduce). Method: barrier before every op, per-op time = max over "
                + "ranks, median over iterations (iterations scale with size). allreduce, broadcast and reduce work in "
                + "place (jccl's buffer is both input and output); allgather and reduce_scatter are timed out of place "
                + "(time) and in place (inplace: the input is this rank's block of the output, or the output this "
                + "rank's block of the input); cpu is the CPU time per call of rank 0's process, all its threads (transport readers, GC and JIT too; with threads, the process's divided by the ranks), the barrier before each call included, the harness's refills and checks not; '-' where the row took under 0.2 s of CPU, which the 10 ms clock cannot resolve. With --compare gloo,mpi, torch's "
                + "gloo and Open MPI run the same sizes in the same session and each row shows their time and the "
                + "ratio. Where 2 or more ranks fit this host's cores (not on the bed), rtt is the round trip of a "
                + "cache line between rank 0's and rank 1's cores measured by those ranks just before the row "
                + "(jccl/Open MPI with --compare mpi): on a virtual machine it moves with where the host puts the "
                + "virtual CPUs, and a small call's time with it; a ratio whose two rows ran more than "
                + Bench.PLACEMENT_SPREAD + "x apart in it is marked '*'. With --algorithms auto and others, each collective's table ends with AUTO's "
                + "time over the fastest explicit row's at each size.",
            "",
            "Progress goes to stderr (a line in place on a terminal, else a line per algorithm and peer measured); "
                + "stdout has the table only."})
public final class BenchCommand implements Callable<Integer> {

    @Option(names = "--ops", split = ",", defaultValue = "allreduce",
            description = "allreduce, broadcast, allgather, reducescatter, alltoall, reduce (default: ${DEFAULT-VALUE}).")
    List<String> ops;

    @Option(names = "--registered", description = "Buffers from Communicator.allocate (every op; allgather and "
            + "reduce_scatter out of place only): on shm they live in shared memory and the shared-memory algorithms "
            + "read them in place (rows marked +reg).")
    boolean registered;

    @Option(names = "--late-peer", paramLabel = "SECONDS", description = "Also let rank 0 arrive this many seconds "
            + "late at an allreduce and report the share of a core the waiting ranks used meanwhile.")
    double latePeer;

    @Option(names = "--ranks", defaultValue = "4", description = "World size (default: ${DEFAULT-VALUE}).")
    int ranks;

    @Option(names = "--transport", defaultValue = "threads", paramLabel = "threads|shm|tcp",
            converter = Options.Transport.class,
            description = "threads (one JVM), shm or tcp (a JVM per rank) (default: ${DEFAULT-VALUE}).")
    String transport;

    @Option(names = "--hosts", defaultValue = "1", description = "Simulated hosts of the multi-host test bed "
            + "(network, UTS and mount namespaces of this machine; needs root): with 2 or more, --ranks-per-host ranks "
            + "run on each, shared memory within a host and TCP between hosts, and gloo (--compare gloo) runs on the "
            + "same bed; at most 16 (default: ${DEFAULT-VALUE}, no bed).")
    int hosts;

    @Option(names = "--ranks-per-host", defaultValue = "2",
            description = "Ranks on each host of the bed (default: ${DEFAULT-VALUE}).")
    int ranksPerHost;

    @Option(names = "--link", paramLabel = "RATE", description = "Limit each bed host's outgoing link to RATE "
            + "(tc tbf, e.g. 1gbit, 100mbit); default unlimited.")
    String link;

    /** The bed while it is up (--hosts 2 or more), else null. */
    io.jccl.launch.Bed bed;

    @Option(names = "--algorithms", split = ",", defaultValue = "auto",
            description = "Algorithms to measure, each a set of rows: auto (the cost model's choice per size, shown as "
                    + "AUTO:<choice>), ring, tree, halving_doubling, bruck, shared_memory (threads or shm), ordered, "
                    + "hierarchical (across hosts: --hosts, 2 or more ranks per host); an operation without an "
                    + "algorithm has no rows of it, one that these ranks cannot run is a usage error, as is one other "
                    + "than auto and ordered for allreduce, reducescatter and reduce under JCCL_DETERMINISTIC=1, "
                    + "which runs them as ordered (default: ${DEFAULT-VALUE}).")
    List<String> algorithms;

    @Option(names = "--sizes", split = ",", defaultValue = "4,1K,64K,1M,16M,64M", converter = Options.Size.class,
            description = "Buffer sizes in bytes, K/M/G suffixes (full buffer; all_gather: output, reduce_scatter: "
                + "input), each at most a Java array of float32 (8G less 36 bytes) whose arrays fit in memory: a rank "
                + "process gets a heap of three times the largest size and 256M (at least 1G), ranks as threads share "
                + "this JVM's (default: ${DEFAULT-VALUE}).")
    List<Long> sizes;

    @Option(names = "--scale", defaultValue = "1.0",
            description = "Multiplies the iteration counts (default: ${DEFAULT-VALUE}).")
    double scale;

    @Option(names = "--rounds", defaultValue = "1", description = "Runs of every row, interleaved (round k starts "
            + "k places further along the list of peers and algorithms), each row showing the median of its runs' "
            + "medians (--json keeps every jccl run's): on a noisy machine, rows compared in one table then share its "
            + "phases (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--compare", split = ",", description = "Peers to measure in the same run: gloo (torch's, run with "
            + "$${JCCL_TORCH_PYTHON:-/usr/bin/python3}), mpi (Open MPI: mpicc and mpirun on the PATH).")
    List<String> compare;

    @Option(names = "--coalesced", description = "Also time 1,000 tensors of 4 KiB allreduced one call each against "
            + "one coalesced call (threads only).")
    boolean coalesced;

    @Option(names = "--json", description = "Also write the rows as JSON to this file.")
    File json;

    @Option(names = "--plot", description = "Write busbw against size (PNG), one line per algorithm and peer.")
    File plot;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    /**
     * How long a peer's run (gloo's script, mpirun) may take, and mpicc's compilation; then its processes are
     * stopped, every one it started included. The tests shorten them.
     */
    java.time.Duration peerLimit = java.time.Duration.ofMinutes(30);
    java.time.Duration compileLimit = java.time.Duration.ofMinutes(5);
    /** How long mpirun gets to stop its ranks after SIGTERM before what is left is killed. */
    static final java.time.Duration MPIRUN_GRACE = java.time.Duration.ofSeconds(5);
    /** The command that runs this one's workers, for their messages: jccl tune measures through it. */
    String name = "jccl bench";
    /** The peers' programs: torch's interpreter (null: JCCL_TORCH_PYTHON's), mpicc and mpirun; the tests fake them. */
    String python;
    String mpicc = "mpicc";
    String mpirun = "mpirun";

    /** The operations of --ops, the algorithms of --algorithms; set by {@link #check}. */
    private List<OpType> opTypes;
    private List<Algorithm> algorithmList;
    /** Where progress goes; null when another command (tune) measures through this one. */
    private Progress progress;
    private int stepsDone;
    private int stepsTotal;
    /** The directories of --json and --plot that {@link #check} made, in that order: a run that fails removes them. */
    private final List<Path> made = new ArrayList<>();

    /** Every option checked before anything runs: a wrong one is a usage error. */
    private void check() {
        opTypes = Options.parseAll(spec, "--ops", ops, Bench::parse);
        algorithmList = Options.parseAll(spec, "--algorithms", algorithms, Algorithm::parse,
                Options.names(Algorithm.values()));
        Options.once(spec, "--ops", opTypes, Bench::label);
        Options.once(spec, "--algorithms", algorithmList, a -> a.name().toLowerCase(java.util.Locale.ROOT));
        Options.once(spec, "--sizes", sizes, b -> b + " bytes");
        Options.atLeast(spec, "--ranks", ranks, 1);
        Options.hosts(spec, hosts);
        Options.atLeast(spec, "--ranks-per-host", ranksPerHost, 1);
        Options.atLeast(spec, "--rounds", rounds, 1);
        if (!(scale > 0)) {
            throw Options.usage(spec, "Invalid value for option '--scale': " + scale + " (it must be above 0)");
        }
        if (latePeer < 0) {
            throw Options.usage(spec, "Invalid value for option '--late-peer': " + latePeer + " (it must be 0 or more)");
        }
        for (String peer : compare == null ? List.<String>of() : compare) {
            if (!peer.equals("gloo") && !peer.equals("mpi")) {
                throw Options.usage(spec, "Invalid value for option '--compare': '" + peer + "' (gloo and/or mpi)");
            }
        }
        if (hosts > 1 && (coalesced || latePeer > 0 || (compare != null && compare.contains("mpi")))) {
            throw Options.usage(spec, "--hosts: --coalesced, --late-peer and --compare mpi run on one host only");
        }
        if (hosts < 2 && link != null) {
            throw Options.usage(spec, "--link limits the links of the test bed: give --hosts 2 or more");
        }
        int world = hosts > 1 ? hosts * ranksPerHost : ranks;
        for (long b : sizes) {
            for (OpType op : opTypes) {
                Options.fits(spec, "--sizes", b, op, world, transport.equals("threads") && hosts < 2, world);
            }
        }
        // an algorithm these ranks cannot run failed at run time, after every other row had been measured; one that
        // deterministic mode overrides ran ORDERED under its name (the rows are float32)
        boolean deterministic = io.jccl.JcclSettings.fromEnvironment().deterministic();
        for (int i = 0; i < algorithmList.size(); i++) {
            for (OpType op : opTypes) {
                Options.runnable(spec, "--algorithms", algorithms.get(i).trim(), op, Bench.label(op),
                        algorithmList.get(i), true, deterministic, transport, ranks, hosts, ranksPerHost);
            }
        }
        // last: their directories are made now (they were after every row had been measured)
        if (json != null) {
            made.addAll(Options.output(spec, "--json", json, true));
        }
        if (plot != null) {
            made.addAll(Options.output(spec, "--plot", plot, true));
        }
    }

    /**
     * Runs the benchmark; when it fails (a usage error found after --json's directories were made, a peer that does
     * not start, a bed or workers that fail), the directories it made for its files are removed again, those still
     * empty: they were left behind.
     */
    @Override
    public Integer call() throws Exception {
        made.clear();
        boolean finished = false;
        try {
            int status = run();
            finished = true;
            return status;
        } finally {
            if (!finished) {
                Options.removeMade(made);
            }
        }
    }

    private int run() throws Exception {
        check();
        progress = Progress.of("jccl bench");
        if (hosts > 1) {
            ranks = hosts * ranksPerHost;
            transport = "auto";
            try (io.jccl.launch.Bed up = io.jccl.launch.Bed.up(hosts, ranksPerHost, link)) {
                bed = up;
                return measureAll();
            } finally {
                bed = null;
            }
        }
        return measureAll();
    }

    private int measureAll() throws Exception {
        long[] bytes = sizes.stream().mapToLong(Long::longValue).toArray();
        PrintStream out = System.out;
        String where = bed != null ? String.format(Locale.ROOT, "processes on %d simulated hosts (%d per host, "
                + "links %s; shm within a host, tcp between)", hosts, ranksPerHost, link == null ? "unlimited" : link)
                : transport.equals("threads") ? "threads" : transport + " processes";
        out.printf(Locale.ROOT, "# jccl bench: %d ranks as %s, float32, SUM, method: barrier, op; max over ranks; "
                + "median over iterations%s%n", ranks, where, rounds == 1 ? "" : String.format(Locale.ROOT,
                "; median of %d interleaved runs", rounds));
        Map<String, List<Bench.Row>> series = new LinkedHashMap<>();
        Map<String, Map<String, double[]>> peers = new LinkedHashMap<>();
        Map<String, Map<String, double[]>> peersCoreNs = new LinkedHashMap<>(); // NaN where not measured
        List<String> peerNames = compare == null ? List.of() : compare;
        for (String peer : peerNames) {
            peers.put(peer, new LinkedHashMap<>());
            peersCoreNs.put(peer, new LinkedHashMap<>());
            // the peers' conditions are theirs, not jccl's: said, so that a ratio is read with them
            out.println(peer.equals("mpi") ? "# Open MPI: " + ranks + " processes under mpirun on this host (its "
                    + "shared memory), same sizes and method (mpi_bench.c)"
                    : "# gloo: torch.distributed's gloo backend, called from Python, " + (bed != null ? hosts
                    * ranksPerHost + " processes over the bed's links" : ranks + " processes over TCP loopback")
                    + ", same sizes and method (gloo_bench.py)");
        }
        Map<OpType, java.util.Set<Algorithm>> plan = new LinkedHashMap<>();
        for (OpType op : opTypes) {
            // the requested algorithms this operation has (AUTO always); none of them: AUTO
            java.util.Set<Algorithm> chosen = java.util.EnumSet.noneOf(Algorithm.class);
            for (Algorithm requested : algorithmList) {
                if (requested == Algorithm.AUTO || Algorithm.available(op).contains(requested)) {
                    chosen.add(requested);
                }
            }
            if (chosen.isEmpty()) {
                chosen.add(Algorithm.AUTO);
            }
            plan.put(op, chosen);
            stepsTotal += (chosen.size() + peerNames.size()) * rounds;
        }
        boolean ok = true;
        for (OpType op : opTypes) {
            StringBuilder head = new StringBuilder();
            for (String peer : peerNames) {
                head.append(String.format(" %12s %10s ", peer + "(us)", peer + "/jccl")); // and a mark's place
            }
            // peers and algorithms, each run once a round, round k starting k places further along
            List<Object> items = new ArrayList<>(peerNames);
            items.addAll(plan.get(op));
            Map<Object, List<Object>> runs = new LinkedHashMap<>();
            for (Object item : items) {
                runs.put(item, new ArrayList<>());
            }
            for (int k = 0; k < rounds; k++) {
                for (int j = 0; j < items.size(); j++) {
                    Object item = items.get((j + k) % items.size());
                    String what = (item instanceof String ? item + " " + Bench.label(op) : Bench.label(op) + " "
                            + item) + (rounds == 1 ? "" : ", round " + (k + 1) + " of " + rounds);
                    progress.update(stepsDone, stepsTotal, what);
                    int done = stepsDone;
                    if (item instanceof String) {
                        runs.get(item).add(item.equals("gloo") ? new PeerRun(glooTimes(op, bytes), null)
                                : mpiTimes(op, bytes));
                    } else {
                        runs.get(item).add(measure(op, (Algorithm) item, bytes, b -> progress.update(done, stepsTotal,
                                what + ", " + b + " bytes measured")));
                    }
                    progress.step(++stepsDone, stepsTotal, what + " measured");
                }
            }
            for (String peer : peerNames) {
                List<PeerRun> of = new ArrayList<>();
                for (Object r : runs.get(peer)) {
                    of.add((PeerRun) r);
                }
                peers.get(peer).put(Bench.label(op), Bench.medianOfRuns(of.stream().map(PeerRun::us)
                        .toArray(double[][]::new)));
                double[] core = new double[bytes.length];
                for (int i = 0; i < core.length; i++) {
                    final int at = i;
                    core[i] = Bench.medianOfMeasured(of.stream().mapToDouble(r -> r.coreNs() == null ? Double.NaN
                            : r.coreNs()[at]).toArray());
                }
                peersCoreNs.get(peer).put(Bench.label(op), core);
            }
            boolean anyCoreNs = coreRoundTrip();
            if (anyCoreNs) {
                head.append(String.format(" %12s", "rtt(ns)"));
            }
            progress.clear();
            out.println();
            out.printf("# %s%n", Bench.label(op));
            out.printf("%12s %12s %7s %6s %5s %18s %12s %9s %9s %7s %9s %12s%s%n", "size", "count", "type", "redop",
                    "root", "algorithm", "time(us)", "algbw", "busbw", "#wrong", "cpu(us)", "inplace(us)", head);
            List<Bench.Row> autoRows = null;
            List<List<Bench.Row>> explicitRows = new ArrayList<>();
            boolean placementsDiffer = false;
            for (Algorithm algorithm : plan.get(op)) {
                List<List<Bench.Row>> measured = new ArrayList<>();
                for (Object r : runs.get(algorithm)) {
                    @SuppressWarnings("unchecked")
                    List<Bench.Row> rows = (List<Bench.Row>) r;
                    measured.add(rows);
                }
                List<Bench.Row> rows = Bench.medianOfRuns(measured);
                series.put(Bench.label(op) + " " + rows.get(0).algorithm, rows);
                if (algorithm == Algorithm.AUTO) {
                    autoRows = rows;
                } else {
                    explicitRows.add(rows);
                }
                for (int i = 0; i < rows.size(); i++) {
                    Bench.Row r = rows.get(i);
                    ok &= r.wrong == 0;
                    StringBuilder peer = new StringBuilder();
                    StringBuilder core = new StringBuilder(fmtNs(r.coreRoundTripNs));
                    for (String name : peerNames) {
                        double[] g = peers.get(name).get(Bench.label(op));
                        double theirs = peersCoreNs.get(name).get(Bench.label(op))[i];
                        // a ratio of rows whose cores' round trips differ that much compares placements (CoreRoundTrip)
                        boolean differ = Bench.placementsDiffer(r.coreRoundTripNs, theirs);
                        placementsDiffer |= differ;
                        peer.append(String.format(Locale.ROOT, " %12.1f %10.2f%s", g[i], g[i] / r.medianUs,
                                differ ? "*" : " "));
                        if (!Double.isNaN(theirs)) {
                            core.append('/').append(fmtNs(theirs));
                        }
                    }
                    if (anyCoreNs) {
                        peer.append(String.format(" %12s", core));
                    }
                    out.printf(Locale.ROOT, "%12d %12d %7s %6s %5s %18s %12.2f %9.3f %9.3f %7d %9s %12s%s%n",
                            r.bytes, r.count,
                            "float", op == OpType.ALL_REDUCE || op == OpType.REDUCE
                                    || op == OpType.REDUCE_SCATTER ? "sum" : "-",
                            op == OpType.BROADCAST || op == OpType.REDUCE ? "0" : "-", r.algorithm, r.medianUs,
                            r.algbw(), r.busbw(), r.wrong, Double.isNaN(r.cpuSecondsPerOp) ? "-"
                                    : String.format(Locale.ROOT, "%.1f", r.cpuSecondsPerOp * 1e6), Double.isNaN(r.inPlaceUs) ? "-"
                                    : String.format(Locale.ROOT, "%.2f", r.inPlaceUs), peer);
                }
            }
            if (anyCoreNs) {
                out.println("# rtt(ns): the round trip of a cache line between rank 0's and rank 1's cores just before "
                        + "the row (jccl" + (peerNames.contains("mpi") ? "/Open MPI" : "") + (rounds > 1
                        ? "; the median of the runs'" : "") + "), which a small call's time follows");
            }
            if (placementsDiffer) {
                out.println("# *: the two rows ran with round trips more than " + Bench.PLACEMENT_SPREAD + "x apart, so "
                        + "the ratio compares the machine's placements of the cores as much as the libraries "
                        + "(docs/performance.md, session 36)");
            }
            List<String> against = Bench.autoAgainstBest(autoRows, explicitRows);
            if (!against.isEmpty()) {
                out.printf("# %s: AUTO's time over the fastest explicit row's, by size%n", Bench.label(op));
                against.forEach(out::println);
            }
            if (op == OpType.REDUCE_SCATTER && peerNames.contains("gloo")) { // gloo_bench.py's method field
                out.println("# gloo's reduce_scatter: all_to_all_single and a sum on each rank (torch 1.13's gloo "
                        + "backend has none)");
            }
        }
        if (latePeer > 0) {
            progress.update(stepsDone, stepsTotal, "late peer");
            double[] r = latePeerCpu();
            progress.clear();
            out.println();
            out.printf(Locale.ROOT, "# late peer: rank 0 arrived %.1f s late at an allreduce; the waiting ranks used at "
                    + "most %.1f%% of a core meanwhile (%.3f CPU s)%n", r[1], 100 * r[0], r[0] * r[1]);
        }
        if (coalesced) {
            int iters = Math.max(3, (int) (11 * scale));
            progress.update(stepsDone, stepsTotal, "coalesced allreduce");
            double[] t = Jccl.runThreads(ranks, comm -> Bench.coalesced(comm, 1000, 1024, iters)).get(0);
            progress.clear();
            out.println();
            out.printf(Locale.ROOT, "# coalesced allreduce, 1,000 float32 tensors of 4 KiB, %d ranks as threads "
                    + "(median of %d)%n", ranks, iters);
            out.printf(Locale.ROOT, "one call each: %.0f us, one coalesced call: %.0f us, ratio %.1fx%n", t[0], t[1],
                    t[0] / t[1]);
        }
        if (json != null) {
            writeJson(series, peers, peersCoreNs);
            progress.wrote(json);
        }
        if (plot != null) {
            writePlot(series, peers);
            progress.wrote(plot);
        }
        progress.clear();
        return ok ? 0 : 1;
    }

    private double[] latePeerCpu() throws Exception {
        if (transport.equals("threads")) {
            return Jccl.runThreads(ranks, comm -> Bench.latePeer(comm, latePeer)).get(0);
        }
        try (WorkDir work = WorkDir.create("jccl-bench-")) {
            int status = work.runWorkers(name, ranks, transport, "1g", List.of("bench-worker",
                    work.resolve("late.json").toString(), "ALLREDUCE", "AUTO", "1", "4", "--late-peer",
                    Double.toString(latePeer)));
            if (status != 0) {
                throw new IllegalStateException("bench workers failed: " + work.logTail(30));
            }
            com.fasterxml.jackson.databind.JsonNode n = new ObjectMapper().readTree(work.resolve("late.json").toFile());
            return new double[] {n.get(0).asDouble(), n.get(1).asDouble()};
        }
    }

    /** What a peer's run gives: its median time per size, and its cores' round trip per size (null: not measured). */
    record PeerRun(double[] us, double[] coreNs) {
    }

    /**
     * Whether the ranks measure the round trip between rank 0's and rank 1's cores before each row
     * ({@link io.jccl.bench.CoreRoundTrip}): two or more ranks on this host, no more than its cores (oversubscribed
     * ranks would spin against each other), not on the simulated hosts of the bed.
     */
    boolean coreRoundTrip() {
        return io.jccl.bench.CoreRoundTrip.applies(bed != null, ranks, Runtime.getRuntime().availableProcessors());
    }

    private static String fmtNs(double ns) {
        return Double.isNaN(ns) ? "-" : String.format(Locale.ROOT, "%.0f", ns);
    }

    List<Bench.Row> measure(OpType op, Algorithm algorithm, long[] bytes) throws Exception {
        return measure(op, algorithm, bytes, null);
    }

    /** {@code sizeDone}, unless null, hears of each size measured (ranks as threads only: processes say nothing). */
    List<Bench.Row> measure(OpType op, Algorithm algorithm, long[] bytes, java.util.function.LongConsumer sizeDone)
            throws Exception {
        if (transport.equals("threads")) {
            return Jccl.runThreads(ranks, comm -> Bench.run(comm, op, algorithm, bytes, scale, registered,
                    coreRoundTrip(), comm.rank() == 0 ? sizeDone : null)).get(0);
        }
        try (WorkDir work = WorkDir.create("jccl-bench-")) {
            List<String> args = new ArrayList<>(List.of("bench-worker", work.resolve("rows.json").toString(),
                    Bench.cliName(op).toUpperCase(Locale.ROOT), algorithm.name(), Double.toString(scale)));
            if (registered) {
                args.add("--registered");
            }
            if (coreRoundTrip()) {
                args.add("--core-round-trip");
            }
            for (long b : bytes) {
                args.add(Long.toString(b));
            }
            long most = 1;
            for (long b : bytes) {
                most = Math.max(most, Bench.elements(op, b, ranks)); // within a few elements of any world's
            }
            String heap = Bench.heap(most); // 1 GiB, or what the largest row's arrays need
            int status = bed != null ? bed.runWorkers(heap, args, work.log())
                    : work.runWorkers(name, ranks, transport, heap, args);
            if (status != 0) {
                throw new IllegalStateException("bench workers failed: " + work.logTail(30));
            }
            return BenchWorkerCommand.read(work.resolve("rows.json"), op, ranks);
        }
    }

    double[] glooTimes(OpType op, long[] bytes) throws Exception {
        String py = python != null ? python : GlooReference.pythonPath();
        String[] why = new String[1];
        if (GlooReference.find(py, GlooReference.PROBE_LIMIT, why) == null) {
            throw new IllegalStateException("--compare gloo: " + why[0] + "; install it with '"
                    + GlooReference.INSTALL_HINT + "'");
        }
        try (WorkDir work = WorkDir.create("jccl-gloo-bench-")) {
            Path dir = work.path();
            Path script = dir.resolve("gloo_bench.py");
            try (InputStream in = Bench.class.getResourceAsStream("gloo_bench.py")) {
                Files.copy(in, script);
            }
            List<String> cmd = new ArrayList<>(List.of(py, script.toString(),
                    dir.resolve("out.json").toString(), Integer.toString(ranks), Bench.label(op),
                    Double.toString(scale)));
            for (long b : bytes) {
                cmd.add(Long.toString(b));
            }
            Path log = dir.resolve("log.txt");
            if (bed != null) {
                runGlooOnBed(work, cmd, log);
            } else {
                Process p = work.start(new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()));
                // the script's mp.spawn workers too: killing the script alone left them running
                if (!ProcessTree.waitFor(p, peerLimit)) {
                    throw new IllegalStateException("gloo bench did not finish within " + minutes(peerLimit) + ": "
                            + String.join("\n", Files.readAllLines(log)));
                }
                if (p.exitValue() != 0) {
                    throw new IllegalStateException("gloo bench failed: " + String.join("\n", Files.readAllLines(log)));
                }
            }
            JsonNode rows = new ObjectMapper().readTree(dir.resolve("out.json").toFile());
            double[] t = new double[rows.size()];
            for (int i = 0; i < t.length; i++) {
                t[i] = rows.get(i).get("medianUs").asDouble();
            }
            return t;
        }
    }

    /**
     * gloo on the bed: the script once per host, running that host's ranks (GLOO_BENCH_NODE), the master on host 0,
     * gloo's sockets on the bed's interface.
     */
    private void runGlooOnBed(WorkDir work, List<String> cmd, Path log) throws Exception {
        int port = 31_000 + new java.security.SecureRandom().nextInt(2_000);
        List<Process> procs = new ArrayList<>();
        List<Path> logs = new ArrayList<>();
        try {
            for (int h = 0; h < hosts; h++) {
                List<String> c = new ArrayList<>(bed.on(h));
                c.addAll(cmd);
                ProcessBuilder pb = new ProcessBuilder(c).redirectErrorStream(true);
                Path hostLog = log.resolveSibling("log-host" + h + ".txt");
                logs.add(hostLog);
                pb.redirectOutput(hostLog.toFile());
                Map<String, String> env = pb.environment();
                env.put("GLOO_BENCH_NODE", Integer.toString(h));
                env.put("GLOO_BENCH_PER_NODE", Integer.toString(ranksPerHost));
                env.put("GLOO_BENCH_MASTER", io.jccl.launch.Bed.address(0) + ":" + port);
                env.put("GLOO_SOCKET_IFNAME", "eth0");
                procs.add(work.start(pb));
            }
            long deadline = System.nanoTime() + peerLimit.toNanos();
            List<Process> running = new ArrayList<>(procs);
            while (!running.isEmpty()) { // any host's failure ends the run at once
                for (int i = 0; i < running.size(); i++) {
                    Process p = running.get(i);
                    if (!p.isAlive() && p.exitValue() == 0) {
                        running.remove(i--);
                    } else if (!p.isAlive() || System.nanoTime() - deadline > 0) {
                        StringBuilder sb = new StringBuilder();
                        for (Path l : logs) {
                            sb.append(String.join("\n", Files.readAllLines(l))).append('\n');
                        }
                        throw new IllegalStateException("gloo bench on the bed failed: " + sb);
                    }
                }
                Thread.sleep(20);
            }
        } finally {
            for (Process p : procs) {
                ProcessTree.kill(p.toHandle());
            }
        }
    }

    /** Open MPI on the same sizes: the project's mpi_bench.c, compiled with mpicc, run with mpirun. */
    PeerRun mpiTimes(OpType op, long[] bytes) throws Exception {
        try (WorkDir work = WorkDir.create("jccl-mpi-bench-")) {
            Path src = work.resolve("mpi_bench.c");
            try (InputStream in = Bench.class.getResourceAsStream("mpi_bench.c")) {
                Files.copy(in, src);
            }
            Path exe = work.resolve("mpi_bench");
            Process cc;
            try {
                cc = work.start(new ProcessBuilder(mpicc, "-O2", "-o", exe.toString(), src.toString())
                        .redirectErrorStream(true).redirectOutput(work.log().toFile()));
            } catch (java.io.IOException e) {
                throw new IllegalStateException("--compare mpi: mpicc not found; install Open MPI with "
                        + "'apt-get install -y openmpi-bin libopenmpi-dev'", e);
            }
            if (!ProcessTree.waitFor(cc, compileLimit)) { // a hung compiler was never stopped
                throw new IllegalStateException("mpicc did not finish within " + minutes(compileLimit) + ": "
                        + work.logTail(20));
            }
            if (cc.exitValue() != 0) {
                throw new IllegalStateException("mpicc failed: " + work.logTail(20));
            }
            Path outFile = work.resolve("out.json");
            List<String> cmd = new ArrayList<>(List.of(mpirun, "--allow-run-as-root", "--oversubscribe", "-np",
                    Integer.toString(ranks), exe.toString(), outFile.toString(), Bench.label(op),
                    Double.toString(scale)));
            if (coreRoundTrip()) {
                cmd.add("rtt");
            }
            for (long b : bytes) {
                cmd.add(Long.toString(b));
            }
            Process p = work.start(new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(work.log().toFile()));
            if (!p.waitFor(peerLimit.toMillis(), TimeUnit.MILLISECONDS)) {
                // SIGTERM first: mpirun then stops its ranks (SIGKILL gave it no chance, and they ran on)
                ProcessTree.stop(p, MPIRUN_GRACE);
                throw new IllegalStateException("mpirun did not finish within " + minutes(peerLimit) + ": "
                        + work.logTail(20));
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException("mpirun failed: " + work.logTail(20));
            }
            JsonNode rows = new ObjectMapper().readTree(outFile.toFile());
            double[] t = new double[rows.size()];
            double[] core = new double[rows.size()];
            for (int i = 0; i < t.length; i++) {
                t[i] = rows.get(i).get("medianUs").asDouble();
                double ns = rows.get(i).path("coreRoundTripNs").asDouble(-1);
                core[i] = ns < 0 ? Double.NaN : ns;
            }
            return new PeerRun(t, core);
        }
    }

    /** {@code d} for a message: whole minutes, else seconds. */
    private static String minutes(java.time.Duration d) {
        return d.toSeconds() % 60 == 0 ? d.toMinutes() + " min" : d.toSeconds() + " s";
    }

    private void writeJson(Map<String, List<Bench.Row>> series, Map<String, Map<String, double[]>> peers,
                           Map<String, Map<String, double[]>> peersCoreNs) throws java.io.IOException {
        ObjectMapper m = new ObjectMapper();
        ObjectNode root = m.createObjectNode();
        root.put("ranks", ranks);
        root.put("transport", transport);
        ArrayNode arr = root.putArray("rows");
        for (List<Bench.Row> rows : series.values()) {
            for (int i = 0; i < rows.size(); i++) {
                Bench.Row r = rows.get(i);
                ObjectNode n = arr.addObject();
                n.put("op", Bench.label(r.op));
                n.put("algorithm", r.algorithm);
                n.put("bytes", r.bytes);
                n.put("count", r.count);
                n.put("timeUs", r.medianUs);
                n.put("algbw", r.algbw());
                n.put("busbw", r.busbw());
                n.put("wrong", r.wrong);
                if (!Double.isNaN(r.cpuSecondsPerOp)) { // absent: under what the CPU clock resolves
                    n.put("cpuSecondsPerOpRank0", r.cpuSecondsPerOp);
                }
                if (!Double.isNaN(r.inPlaceUs)) {
                    n.put("inPlaceTimeUs", r.inPlaceUs);
                }
                if (r.runsUs != null) {
                    ArrayNode each = n.putArray("runsTimeUs");
                    for (double t : r.runsUs) {
                        each.add(t);
                    }
                }
                if (!Double.isNaN(r.coreRoundTripNs)) {
                    n.put("coreRoundTripNs", r.coreRoundTripNs);
                }
                for (Map.Entry<String, Map<String, double[]>> p : peers.entrySet()) {
                    n.put(p.getKey() + "TimeUs", p.getValue().get(Bench.label(r.op))[i]);
                    double ns = peersCoreNs.get(p.getKey()).get(Bench.label(r.op))[i];
                    if (!Double.isNaN(ns)) {
                        n.put(p.getKey() + "CoreRoundTripNs", ns);
                    }
                }
            }
        }
        m.writerWithDefaultPrettyPrinter().writeValue(json, root);
    }

    private void writePlot(Map<String, List<Bench.Row>> series, Map<String, Map<String, double[]>> peers)
            throws java.io.IOException {
        XYSeriesCollection data = new XYSeriesCollection();
        for (Map.Entry<String, List<Bench.Row>> e : series.entrySet()) {
            XYSeries s = new XYSeries("jccl " + e.getKey());
            for (Bench.Row r : e.getValue()) {
                s.add(r.bytes, Math.max(1e-6, r.busbw()));
            }
            data.addSeries(s);
        }
        for (Map.Entry<String, Map<String, double[]>> p : peers.entrySet()) {
            for (Map.Entry<String, double[]> e : p.getValue().entrySet()) {
                XYSeries s = new XYSeries(p.getKey() + " " + e.getKey());
                OpType op = Bench.parse(e.getKey());
                List<Bench.Row> any = series.get(series.keySet().stream().filter(k -> k.startsWith(e.getKey() + " "))
                        .findFirst().orElseThrow());
                for (int i = 0; i < any.size(); i++) {
                    double algbw = any.get(i).bytes / (e.getValue()[i] * 1e-6) / 1e9;
                    s.add(any.get(i).bytes, Math.max(1e-6, algbw * Bench.busFactor(op, ranks)));
                }
                data.addSeries(s);
            }
        }
        JFreeChart chart = ChartFactory.createXYLineChart("busbw, " + ranks + " ranks, " + transport, "bytes",
                "busbw (GB/s)", data, PlotOrientation.VERTICAL, true, false, false);
        chart.getXYPlot().setDomainAxis(new LogarithmicAxis("bytes"));
        chart.getXYPlot().setRangeAxis(new LogarithmicAxis("busbw (GB/s)"));
        ChartUtils.saveChartAsPNG(plot, chart, 900, 540);
    }
}
