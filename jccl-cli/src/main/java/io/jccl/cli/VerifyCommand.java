package io.jccl.cli;

import io.jccl.Algorithm;
import io.jccl.DataType;
import io.jccl.ReduceOp;
import io.jccl.verify.Primitive;
import io.jccl.verify.Report;
import io.jccl.verify.Verifier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code jccl verify}: the verification table against torch.distributed gloo. */
@Command(name = "verify", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {
            "Runs every primitive on jccl (ranks as threads; with --transport shm|tcp, as JVM processes) and "
                + "the same inputs on torch.distributed's gloo backend, and prints a verification table followed by the per-rank "
                + "byte counters. Exit status 1 if any row mismatches. Progress goes to stderr (a line per primitive "
                + "and world size when stderr is not a terminal); stdout has the tables or the JSON only.",
            "",
            "gloo is run with $${JCCL_TORCH_PYTHON:-/usr/bin/python3}; without torch the table compares against "
                + "jccl's exact Java reference and says so. torch 1.13's gloo has no reduce_scatter, AVG or "
                + "bfloat16: those rows compare with gloo's all_reduce block, gloo's SUM divided by N, and an "
                + "exact model of gloo's ring order in bfloat16 (see docs/verification.md)."})
public final class VerifyCommand implements Callable<Integer> {

    @Option(names = "--world", split = ",", paramLabel = "N",
            description = "World size(s), comma-separated (default: ${DEFAULT-VALUE}).", defaultValue = "4")
    List<Integer> worlds;

    @Option(names = "--count", split = ",", paramLabel = "ELEMENTS",
            description = "Element count(s): the full buffer (all_gather/gather: output; reduce_scatter/scatter/"
                + "all_to_all: input), rounded up to a multiple of the world size where needed "
                + "(default: ${DEFAULT-VALUE}).", defaultValue = "4099")
    List<Integer> counts;

    @Option(names = "--dtype", split = ",", paramLabel = "TYPE",
            description = "Data type(s): float32, float64, float16, bfloat16, int8, uint8, int32, int64 "
                + "(default: all).")
    List<String> dtypes;

    @Option(names = "--op", split = ",", paramLabel = "OP",
            description = "Reduce op(s): sum, product, min, max, avg, band, bor, bxor (default: all).")
    List<String> ops;

    @Option(names = "--primitive", split = ",", paramLabel = "NAME",
            description = "Primitive(s): all_reduce, broadcast, all_gather, reduce_scatter, reduce, gather, "
                + "scatter, all_to_all (default: all).")
    List<String> primitives;

    @Option(names = "--root", paramLabel = "RANK", defaultValue = "0",
            description = "Root of broadcast, reduce, gather and scatter, taken modulo the world size "
                + "(default: ${DEFAULT-VALUE}).")
    int root;

    @Option(names = "--algorithm", paramLabel = "NAME", defaultValue = "ring",
            description = "Algorithm where a primitive has it: ring (gloo's order: every row must be identical), "
                + "auto (the cost model's choice), tree, halving_doubling, bruck, shared_memory (threads or shm), "
                + "ordered, hierarchical (with --hosts, 2 or more ranks per host); a primitive without it runs its "
                + "default; one that these ranks cannot run is a usage error, as is, under JCCL_DETERMINISTIC=1, "
                + "one other than auto and ordered that a floating-point all_reduce, reduce_scatter or reduce would "
                + "run, since the mode runs them as ordered (default: ${DEFAULT-VALUE}).")
    String algorithm;

    @Option(names = "--seed", defaultValue = "1", description = "Seed of the inputs (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--reference", paramLabel = "auto|gloo|java", defaultValue = "auto",
            description = "auto: gloo if torch is importable, else the Java model; gloo: require torch; "
                + "java: the exact Java model only (default: ${DEFAULT-VALUE}).")
    String reference;

    @Option(names = "--timeout-s", defaultValue = "120",
            description = "Deadline of each collective, in seconds (default: ${DEFAULT-VALUE}).")
    long timeoutSeconds;

    @Option(names = "--hosts", defaultValue = "1", description = "Run the ranks on this many simulated hosts of the "
            + "multi-host test bed (needs root), --ranks-per-host on each: shared memory within a host, TCP between; "
            + "the world size is their product; at most 16 (default: ${DEFAULT-VALUE}, no bed).")
    int hosts;

    @Option(names = "--ranks-per-host", defaultValue = "2",
            description = "Ranks on each host of the bed (default: ${DEFAULT-VALUE}).")
    int ranksPerHost;

    @Option(names = "--link", paramLabel = "RATE", description = "With --hosts: limit each host's link to RATE (tc "
            + "tbf, e.g. 1gbit).")
    String link;

    @Option(names = "--transport", defaultValue = "threads", paramLabel = "threads|shm|tcp",
            converter = Options.Transport.class,
            description = "threads: ranks as threads over the in-process queue mesh (local is another name for it); "
                + "shm or tcp: every rank a JVM process, connected by shared memory or by sockets "
                + "(default: ${DEFAULT-VALUE}).")
    String transport;

    @Option(names = "--json", description = "Print the report as JSON instead of tables.")
    boolean json;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    /** The settings of the options, every value checked: a wrong one is a usage error, before anything runs. */
    Verifier.Settings settings() {
        Verifier.Settings s = new Verifier.Settings();
        for (int w : worlds) {
            Options.atLeast(spec, "--world", w, 1);
        }
        s.worlds = worlds;
        for (int c : counts) {
            Options.atLeast(spec, "--count", c, 0);
        }
        s.counts = counts;
        if (dtypes != null) {
            s.dtypes = Options.parseAll(spec, "--dtype", dtypes, DataType::parse);
        }
        if (ops != null) {
            s.ops = Options.parseAll(spec, "--op", ops, ReduceOp::parse);
        }
        if (primitives != null) {
            s.primitives = Options.parseAll(spec, "--primitive", primitives, Primitive::parse);
        }
        s.root = root;
        s.algorithm = Options.parse(spec, "--algorithm", algorithm, Algorithm::parse, Options.names(Algorithm.values()));
        s.seed = seed;
        s.reference = Options.parse(spec, "--reference", reference,
                r -> Verifier.ReferenceMode.valueOf(r.trim().toUpperCase(java.util.Locale.ROOT)), "auto, gloo, java");
        Options.atLeast(spec, "--timeout-s", timeoutSeconds, 1);
        s.timeout = Duration.ofSeconds(timeoutSeconds);
        s.transport = transport;
        Options.hosts(spec, hosts);
        Options.atLeast(spec, "--ranks-per-host", ranksPerHost, 1);
        if (link != null && hosts < 2) {
            throw Options.usage(spec, "--link limits the links of the test bed: give --hosts 2 or more");
        }
        // an algorithm these ranks cannot run made every row of its primitives an error, after running them all;
        // one that deterministic mode overrides (asked for, or the default a primitive without it runs) ran ORDERED
        // under its name, and as RING was held to gloo's bits
        boolean deterministic = io.jccl.JcclSettings.fromEnvironment().deterministic();
        boolean floating = s.dtypes.stream().anyMatch(DataType::isFloatingPoint);
        for (int w : hosts > 1 ? List.of(hosts * ranksPerHost) : worlds) {
            for (io.jccl.OpType p : s.primitives) {
                Options.runnable(spec, "--algorithm", algorithm.trim(), p, Primitive.of(p).torchName(),
                        io.jccl.verify.JcclRunner.algorithmFor(s.algorithm, p), floating, deterministic, transport, w,
                        hosts, ranksPerHost);
            }
        }
        return s;
    }

    @Override
    public Integer call() throws Exception {
        Verifier.Settings s = settings();
        Progress progress = Progress.of("jccl verify");
        s.listener = new Verifier.Listener() {
            @Override
            public void begin(String what, int done, int total) {
                progress.update(done, total, what);
            }

            @Override
            public void caseDone(io.jccl.verify.VerifyCase c, int done, int total, boolean lastOfGroup) {
                String what = Primitive.of(c.primitive()).torchName() + ", world " + c.world();
                if (lastOfGroup) {
                    progress.step(done, total, what + " done");
                } else {
                    progress.update(done, total, what);
                }
            }
        };
        Report report;
        if (hosts > 1) {
            s.worlds = List.of(hosts * ranksPerHost);
            try (io.jccl.launch.Bed bed = io.jccl.launch.Bed.up(hosts, ranksPerHost, link)) {
                s.bed = bed;
                report = Verifier.run(s, System.err);
            }
        } else {
            report = Verifier.run(s, System.err);
        }
        progress.clear();
        if (json) {
            report.printJson(System.out);
        } else {
            report.printText(System.out);
        }
        return report.passed() ? 0 : 1;
    }
}
