package io.jccl.verify;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The verification table and the byte-counter table, as text or JSON. */
public final class Report {
    /**
     * What the ranks ran on: {@code transport} as the ranks' communicators name it (JSON's {@code transport}),
     * {@code title} for the first line, {@code counters} for the byte counters' heading, and the test bed's
     * {@code hosts} and {@code ranksPerHost} (0 without a bed).
     */
    record Ranks(String transport, String title, String counters, int hosts, int ranksPerHost) {
        /** Ranks as threads ({@code threads}, alias {@code local}) or JVM processes here ({@code shm}, {@code tcp}). */
        static Ranks of(String transport) {
            if (transport.equals("threads") || transport.equals("local")) {
                return new Ranks("threads", "queue mesh (ranks as threads)", "threads", 0, 0);
            }
            return new Ranks(transport, transport + " (ranks as JVM processes)", transport, 0, 0);
        }

        /**
         * JVM processes on {@code hosts} simulated hosts of the test bed, {@code ranksPerHost} on each, links limited
         * to {@code link} (null: unlimited): shared memory within a host, TCP between ({@code shm+tcp}; plain
         * {@code tcp} with one rank per host, as the rendezvous then connects them).
         */
        static Ranks onBed(int hosts, int ranksPerHost, String link) {
            String where = String.format(Locale.ROOT, "processes on %d simulated hosts of the test bed (%d per host, "
                    + "links %s; shm within a host, tcp between)", hosts, ranksPerHost, link == null ? "unlimited"
                    : link);
            return new Ranks(ranksPerHost > 1 ? "shm+tcp" : "tcp", where, "the test bed (shm within a host, tcp "
                    + "between)", hosts, ranksPerHost);
        }
    }

    private final String reference;
    private final Ranks ranks;
    private final List<Verifier.Row> rows;
    private final List<TrafficLaw.Row> traffic;

    Report(String reference, Ranks ranks, List<Verifier.Row> rows, List<TrafficLaw.Row> traffic) {
        this.reference = reference;
        this.ranks = ranks;
        this.rows = rows;
        this.traffic = traffic;
    }

    public List<Verifier.Row> rows() {
        return rows;
    }

    public List<TrafficLaw.Row> traffic() {
        return traffic;
    }

    public String reference() {
        return reference;
    }

    /** Whether every row passed (identical, within bound, or rejected by both sides). */
    public boolean passed() {
        return rows.stream().allMatch(r -> r.verdict.passed());
    }

    public long count(Verifier.Verdict v) {
        return rows.stream().filter(r -> r.verdict == v).count();
    }

    public void printText(PrintStream out) {
        out.println("jccl verify: " + ranks.title() + " against " + reference);
        out.println();
        String[] head = {"primitive", "dtype", "op", "world", "elements", "algorithm", "reference", "identical",
            "max abs diff", "max ulp", "verdict"};
        List<String[]> lines = new ArrayList<>();
        for (Verifier.Row r : rows) {
            VerifyCase c = r.c;
            Comparison k = r.comparison;
            Primitive p = Primitive.of(c.primitive());
            lines.add(new String[] {
                p.torchName() + (p.rooted() ? " (root " + c.root() + ")" : ""),
                c.dtype().torchName(),
                c.op() == null ? "-" : c.op().name(),
                Integer.toString(c.world()),
                c.count() + (c.countAdjusted() ? " (from " + c.requestedCount() + ")" : ""),
                r.algorithm,
                r.reference,
                k == null ? "-" : k.identical() ? "yes" : "no",
                k == null ? "-" : fmt(k.maxAbs()),
                k == null ? "-" : Long.toString(k.maxUlp()),
                r.verdict.name().toLowerCase(Locale.ROOT).replace('_', ' ')
                    + (r.note != null ? " [" + r.note + "]" : "")});
        }
        table(out, head, lines);
        out.println();
        out.printf(Locale.ROOT, "%d rows: %d identical, %d within bound, %d rejected by both, %d mismatch, %d error%n",
                rows.size(), count(Verifier.Verdict.IDENTICAL), count(Verifier.Verdict.WITHIN_BOUND),
                count(Verifier.Verdict.REJECTED), count(Verifier.Verdict.MISMATCH), count(Verifier.Verdict.ERROR));
        // without torch, or where torch rejects a case: jccl's own kernels, not gloo's results (rows compared: those
        // with a result on both sides, not the rejected or failed ones)
        long compared = rows.stream().filter(r -> r.verdict == Verifier.Verdict.IDENTICAL
                || r.verdict == Verifier.Verdict.WITHIN_BOUND || r.verdict == Verifier.Verdict.MISMATCH).count();
        long model = rows.stream().filter(r -> "java model".equals(r.reference) && (r.verdict
                == Verifier.Verdict.IDENTICAL || r.verdict == Verifier.Verdict.WITHIN_BOUND
                || r.verdict == Verifier.Verdict.MISMATCH)).count();
        if (model > 0) {
            out.printf(Locale.ROOT, "%d of the rows compared were compared with gloo, %d with the Java model (a check "
                    + "of jccl against its own reduction code, not against gloo)%n", compared - model, model);
        }
        out.println();
        out.println("Per-rank byte counters over " + ranks.counters() + " (float32, one call each; T = tensor bytes, "
                + "N = world size)");
        out.println();
        String[] th = {"primitive", "world", "rank", "T bytes", "sent", "received", "law", "law bytes",
            "measured/law"};
        List<String[]> tl = new ArrayList<>();
        for (TrafficLaw.Row t : traffic) {
            tl.add(new String[] {t.primitive, Integer.toString(t.world), Integer.toString(t.rank),
                Long.toString(t.tensorBytes), Long.toString(t.sent), Long.toString(t.received),
                t.law + (t.lawOnReceived ? " recv" : " sent"), Long.toString(t.lawBytes),
                String.format(Locale.ROOT, "%.4f", t.ratio())});
        }
        table(out, th, tl);
        out.println();
        out.println(passed() ? "RESULT: PASS" : "RESULT: FAIL");
    }

    private static String fmt(double d) {
        if (d == 0) {
            return "0";
        }
        return String.format(Locale.ROOT, "%.3g", d);
    }

    private static void table(PrintStream out, String[] head, List<String[]> lines) {
        int[] w = new int[head.length];
        for (int i = 0; i < head.length; i++) {
            w[i] = head[i].length();
        }
        for (String[] l : lines) {
            for (int i = 0; i < l.length; i++) {
                w[i] = Math.max(w[i], l[i].length());
            }
        }
        printLine(out, head, w);
        StringBuilder sep = new StringBuilder();
        for (int i = 0; i < w.length; i++) {
            sep.append(i == 0 ? "|" : "").append("-".repeat(w[i] + 2)).append("|");
        }
        out.println(sep);
        for (String[] l : lines) {
            printLine(out, l, w);
        }
    }

    private static void printLine(PrintStream out, String[] cells, int[] w) {
        StringBuilder sb = new StringBuilder("|");
        for (int i = 0; i < cells.length; i++) {
            sb.append(' ').append(cells[i]).append(" ".repeat(w[i] - cells[i].length())).append(" |");
        }
        out.println(sb);
    }

    public void printJson(PrintStream out) throws java.io.IOException {
        ObjectMapper m = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ObjectNode root = m.createObjectNode();
        root.put("reference", reference);
        root.put("transport", ranks.transport());
        if (ranks.hosts() > 0) {
            root.put("hosts", ranks.hosts());
            root.put("ranksPerHost", ranks.ranksPerHost());
        }
        root.put("passed", passed());
        ArrayNode arr = root.putArray("rows");
        for (Verifier.Row r : rows) {
            ObjectNode n = arr.addObject();
            n.put("primitive", Primitive.of(r.c.primitive()).torchName());
            n.put("dtype", r.c.dtype().torchName());
            n.put("op", r.c.op() == null ? null : r.c.op().name());
            n.put("world", r.c.world());
            n.put("count", r.c.count());
            n.put("requestedCount", r.c.requestedCount());
            n.put("root", Primitive.of(r.c.primitive()).rooted() ? r.c.root() : null);
            n.put("algorithm", r.algorithm);
            n.put("reference", r.reference);
            if (r.comparison != null) {
                n.put("identical", r.comparison.identical());
                n.put("maxAbsDiff", r.comparison.maxAbs());
                n.put("maxUlpDiff", r.comparison.maxUlp());
                n.put("withinBound", r.comparison.withinBound());
            }
            n.put("verdict", r.verdict.name());
            n.put("note", r.note);
        }
        ArrayNode tr = root.putArray("traffic");
        for (TrafficLaw.Row t : traffic) {
            ObjectNode n = tr.addObject();
            n.put("primitive", t.primitive);
            n.put("world", t.world);
            n.put("rank", t.rank);
            n.put("tensorBytes", t.tensorBytes);
            n.put("bytesSent", t.sent);
            n.put("bytesReceived", t.received);
            n.put("law", t.law);
            n.put("lawBytes", t.lawBytes);
            n.put("ratio", t.ratio());
        }
        out.println(m.writeValueAsString(root));
    }
}
