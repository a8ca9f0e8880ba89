package io.jccl.verify;

import io.jccl.Algorithm;
import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.reference.ReferenceModel;

import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The verification job: runs every requested case on jccl and on the reference (real gloo, or the exact Java
 * model when torch is absent or not wanted), and compares them rank by rank.
 */
public final class Verifier {

    /** Which reference to compare with. */
    public enum ReferenceMode {
        /** gloo when torch is importable, the Java model otherwise (with a notice). */
        AUTO,
        /** gloo, or fail. */
        GLOO,
        /** The exact Java model only. */
        JAVA
    }

    /** What to run. */
    public static final class Settings {
        public List<Integer> worlds = List.of(4);
        public List<Integer> counts = List.of(4099);
        public List<DataType> dtypes = List.of(DataType.values());
        public List<ReduceOp> ops = List.of(ReduceOp.values());
        public List<OpType> primitives = Primitive.ALL;
        public int root = 0;
        public Algorithm algorithm = Algorithm.RING;
        public long seed = 1;
        public ReferenceMode reference = ReferenceMode.AUTO;
        public Duration timeout = Duration.ofMinutes(2);
        /** threads: ranks as threads over the queue mesh; shm, tcp: ranks as JVM processes (unused with a bed). */
        public String transport = "threads";
        /** Told of the progress of the run. */
        public Listener listener = Listener.NONE;
        /** The multi-host test bed the ranks run on (one JVM per rank, shm+tcp), or null. */
        public io.jccl.launch.Bed bed;
    }

    /** Told of a run's progress, for a progress line: every method is called on the thread of {@link #run}. */
    public interface Listener {
        /** Tells nothing. */
        Listener NONE = new Listener() {
        };

        /** A long part of the run begins ({@code what}: the gloo reference, the jccl ranks, the byte counters). */
        default void begin(String what, int done, int total) {
        }

        /**
         * Case {@code c} was compared, the {@code done}-th of {@code total}; {@code lastOfGroup} when it is the last
         * of its primitive and world size.
         */
        default void caseDone(VerifyCase c, int done, int total, boolean lastOfGroup) {
        }
    }

    /** Row verdicts; the first three pass. */
    public enum Verdict {
        IDENTICAL, WITHIN_BOUND, REJECTED, MISMATCH, ERROR;

        public boolean passed() {
            return this == IDENTICAL || this == WITHIN_BOUND || this == REJECTED;
        }
    }

    /** One row of the table. */
    public static final class Row {
        public final VerifyCase c;
        public final String algorithm;
        public final String reference;
        public final Verdict verdict;
        public final Comparison comparison;
        public final String note;

        Row(VerifyCase c, String algorithm, String reference, Verdict verdict, Comparison comparison, String note) {
            this.c = c;
            this.algorithm = algorithm;
            this.reference = reference;
            this.verdict = verdict;
            this.comparison = comparison;
            this.note = note;
        }
    }

    /** The cases for one world size, in table order. */
    public static List<VerifyCase> cases(Settings s, int world, int firstId) {
        List<VerifyCase> out = new ArrayList<>();
        int id = firstId;
        for (OpType p : s.primitives) {
            for (int count : s.counts) {
                for (DataType dt : s.dtypes) {
                    List<ReduceOp> ops = Primitive.of(p).reduces() ? s.ops : Collections.singletonList(null);
                    for (ReduceOp op : ops) {
                        out.add(new VerifyCase(id++, p, dt, op, world, count, Math.floorMod(s.root, world), s.seed));
                    }
                }
            }
        }
        return out;
    }

    /**
     * Runs the job. {@code notices} receives one line when the reference falls back to the Java model.
     *
     * @throws IOException if gloo was required, or found, and failed to run
     */
    public static Report run(Settings s, PrintStream notices) throws IOException, InterruptedException {
        GlooReference gloo = null;
        String referenceName = "java model";
        if (s.reference != ReferenceMode.JAVA) {
            String[] why = new String[1];
            gloo = GlooReference.find(why);
            if (gloo == null) {
                String msg = "torch not found: " + why[0] + "; install it with '" + GlooReference.INSTALL_HINT
                        + "' (or set " + GlooReference.PYTHON_ENV + ")";
                if (s.reference == ReferenceMode.GLOO) {
                    throw new IOException(msg);
                }
                notices.println(msg + "; comparing against the exact Java reference instead.");
            } else {
                referenceName = "gloo (torch " + gloo.torchVersion() + ")";
            }
        }
        List<Row> rows = new ArrayList<>();
        List<TrafficLaw.Row> traffic = new ArrayList<>();
        int lawCount = s.counts.stream().mapToInt(Integer::intValue).max().orElse(0);
        List<List<VerifyCase>> batches = new ArrayList<>();
        int total = 0;
        for (int world : s.worlds) {
            List<VerifyCase> cases = cases(s, world, total);
            batches.add(cases);
            total += cases.size();
        }
        String ranks = s.bed != null ? "processes on the test bed" : s.transport.equals("threads") ? "threads"
                : s.transport + " processes";
        for (List<VerifyCase> cases : batches) {
            int world = cases.isEmpty() ? 0 : cases.get(0).world();
            int done = rows.size();
            if (gloo != null) {
                s.listener.begin("gloo reference, world " + world + " (" + cases.size() + " cases)", done, total);
            }
            try (GlooReference.Batch glooResults = gloo == null ? null : gloo.run(world, cases,
                    s.timeout.multipliedBy(Math.max(1, cases.size() / 10 + 1)));
                 CaseRunner runner = runner(world, s.algorithm, s.timeout, s.transport, lawCount, s.bed)) {
                s.listener.begin("jccl, world " + world + " as " + ranks, done, total);
                rows.addAll(compareAll(cases, runner, glooResults, s.listener, done, total));
                s.listener.begin("byte counters, world " + world, rows.size(), total);
                traffic.addAll(runner.traffic(lawCount));
            }
        }
        // on the bed the ranks ran as processes on its hosts, whatever s.transport says
        return new Report(referenceName, s.bed != null ? Report.Ranks.onBed(s.bed.hosts(), s.bed.ranksPerHost(),
                s.bed.link()) : Report.Ranks.of(s.transport), rows, traffic);
    }

    /**
     * Verifies explicit cases, all of world size {@code world}, against {@code gloo} (one torch launch), or
     * against the Java model when {@code gloo} is null.
     */
    public static List<Row> verify(GlooReference gloo, int world, List<VerifyCase> cases, Algorithm algorithm,
                                   Duration timeout, String transport) throws IOException, InterruptedException {
        return verify(gloo, world, cases, algorithm, timeout, transport, null);
    }

    /** As above, the ranks on {@code bed}'s hosts when it is not null. */
    public static List<Row> verify(GlooReference gloo, int world, List<VerifyCase> cases, Algorithm algorithm,
                                   Duration timeout, String transport, io.jccl.launch.Bed bed)
            throws IOException, InterruptedException {
        try (GlooReference.Batch glooResults = gloo == null ? null
                : gloo.run(world, cases, timeout.multipliedBy(Math.max(1, cases.size() / 10 + 1)));
             CaseRunner runner = runner(world, algorithm, timeout, transport, -1, bed)) {
            return compareAll(cases, runner, glooResults, Listener.NONE, 0, cases.size());
        }
    }

    private static CaseRunner runner(int world, Algorithm algorithm, Duration timeout, String transport,
                                     int lawCount, io.jccl.launch.Bed bed) {
        if (bed != null) {
            return lawCount < 0 ? new ProcessRunner(world, algorithm, bed, timeout)
                    : new ProcessRunner(world, algorithm, bed, timeout).measuringTraffic(lawCount);
        }
        return transport.equals("threads") || transport.equals("local") ? new JcclRunner(world, algorithm, timeout)
                : lawCount < 0 ? new ProcessRunner(world, algorithm, transport, timeout)
                : new ProcessRunner(world, algorithm, transport, timeout).measuringTraffic(lawCount);
    }

    private static List<Row> compareAll(List<VerifyCase> cases, CaseRunner runner,
                                        GlooReference.Batch glooResults, Listener listener, int done, int total)
            throws IOException, InterruptedException {
        List<Row> rows = new ArrayList<>();
        runner.runAll(cases, (c, o) -> {
            rows.add(row(c, o, glooResults == null ? null : glooResults.get(c.id())));
            int i = rows.size();
            boolean last = i == cases.size() || cases.get(i).primitive() != c.primitive();
            listener.caseDone(c, done + i, total, last);
        });
        return rows;
    }

    private static Row row(VerifyCase c, Outcome j, GlooReference.Result g) throws IOException {
        boolean jcclRejected = j.error instanceof IllegalArgumentException;
        if (j.error != null && !jcclRejected) {
            return new Row(c, j.algorithm, g == null ? "java model" : g.reference, Verdict.ERROR, null,
                    "jccl failed: " + j.error);
        }
        if (g != null && !g.rejected) {
            if (jcclRejected) {
                return new Row(c, j.algorithm, g.reference, Verdict.ERROR, null, "gloo accepts, jccl rejects: "
                        + j.error.getMessage());
            }
            return compare(c, j, g.outputs(), g.reference, null);
        }
        String torchNote = g != null ? "torch rejects: " + g.message : null;
        if (jcclRejected) {
            boolean undefined = c.op() != null && !c.op().supports(c.dtype());
            String note = undefined ? (g != null ? "torch and jccl reject " : "jccl rejects ") + c.op() + " on "
                    + c.dtype().torchName() : "jccl rejects: " + j.error.getMessage();
            return new Row(c, j.algorithm, g != null ? g.reference : "java model",
                    undefined ? Verdict.REJECTED : Verdict.ERROR, null, note);
        }
        return compare(c, j, model(c), "java model", torchNote);
    }

    private static Row compare(VerifyCase c, Outcome j, List<Buf> expected, String reference,
                               String note) {
        List<Buf> inputs = null;
        if (Primitive.of(c.primitive()).reduces()) {
            inputs = new ArrayList<>();
            for (int r = 0; r < c.world(); r++) {
                inputs.add(c.input(r));
            }
        }
        Comparison total = Comparison.identicalResult();
        for (int r = 0; r < c.world(); r++) {
            if (!c.hasOutput(r)) {
                continue;
            }
            Buf actual = j.outputs.get(r);
            Buf exp = expected.get(r);
            int offset = c.primitive() == OpType.REDUCE_SCATTER ? r * c.outputCount() : 0;
            total = total.merge(Comparison.of(actual, exp, c.op(), inputs, offset));
        }
        Verdict v = total.identical() ? Verdict.IDENTICAL : total.withinBound() ? Verdict.WITHIN_BOUND
                : Verdict.MISMATCH;
        if (v == Verdict.WITHIN_BOUND && mustBeIdentical(c, j.algorithm)) {
            v = Verdict.MISMATCH;
            note = (note == null ? "" : note + "; ") + "not identical, but " + j.algorithm + " "
                    + c.primitive().name().toLowerCase(java.util.Locale.ROOT) + " follows gloo's order";
        }
        return new Row(c, j.algorithm, reference, v, total, note);
    }

    /**
     * Rows that must match gloo bit for bit: data movement (no arithmetic), and the reductions that follow gloo's
     * ring order (RING allreduce, reduce_scatter and reduce).
     */
    static boolean mustBeIdentical(VerifyCase c, String algorithm) {
        return !Primitive.of(c.primitive()).reduces() || algorithm.equals(io.jccl.Algorithm.RING.name());
    }

    /** The worker side of the process runner: this process's rank of every case in {@code dir}. */
    public static int worker(java.nio.file.Path dir, Algorithm algorithm, Duration timeout, int trafficCount)
            throws IOException {
        return ProcessRunner.worker(dir, algorithm, timeout, trafficCount);
    }

    /** Expected outputs per rank from the exact Java model (null where a rank has no output). */
    static List<Buf> model(VerifyCase c) {
        int p = c.world();
        List<Buf> inputs = new ArrayList<>();
        for (int r = 0; r < p; r++) {
            inputs.add(c.input(r));
        }
        List<Buf> out = new ArrayList<>();
        for (int r = 0; r < p; r++) {
            if (!c.hasOutput(r)) {
                out.add(null);
                continue;
            }
            switch (c.primitive()) {
                case ALL_REDUCE:
                case REDUCE:
                    out.add(ReferenceModel.allReduce(inputs, c.op()));
                    break;
                case REDUCE_SCATTER:
                    out.add(ReferenceModel.reduceScatter(inputs, c.op(), r));
                    break;
                case BROADCAST:
                    out.add(inputs.get(c.root()));
                    break;
                case ALL_GATHER:
                case GATHER:
                    out.add(ReferenceModel.allGather(inputs));
                    break;
                case SCATTER:
                    out.add(ReferenceModel.block(inputs.get(c.root()), p, r));
                    break;
                case ALL_TO_ALL:
                    out.add(ReferenceModel.allToAll(inputs, r));
                    break;
                default:
                    throw new AssertionError(c.primitive());
            }
        }
        return out;
    }
}
