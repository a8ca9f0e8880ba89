package io.jccl.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * {@code jccl analyze DIR}: reads every rank's flight record ({@code jccl_fr_rank<r>.json}, written into
 * {@code JCCL_FLIGHT_RECORDER_DIR}) and says what torch's {@code torchfrtrace} says: per communicator, the first
 * call that not every rank finished, the ranks that never entered it (or left no record), the ranks whose calls
 * disagree, and the step and rank each waiting rank waits for.
 */
@Command(name = "analyze", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Reads the flight records in DIR (JCCL_FLIGHT_RECORDER_DIR: one jccl_fr_rank<r>.json per rank) "
            + "and names, per communicator, the first call the ranks did not all finish, the ranks that never "
            + "entered it or left no record, calls that disagree, and what each waiting rank waits for.")
public final class AnalyzeCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "DIR", description = "The directory of the ranks' flight records.")
    Path dir;

    private static final Pattern FILE = Pattern.compile("jccl_fr_rank(\\d+)\\.json");
    private static final Pattern NEVER = Pattern.compile("rank (\\d+) never entered ([A-Za-z]+ #\\d+)");

    /** One rank's collective call as recorded. */
    private static final class Call {
        final int rank;
        final long seq;
        final String op;
        final String signature;
        final String state;
        final long waitingFor;
        final long step;
        final String error;

        Call(int rank, JsonNode e) {
            this.rank = rank;
            this.seq = e.path("collective_seq_id").asLong(-1);
            this.op = e.path("profiling_name").asText("").replace("jccl:", "");
            this.signature = op + " " + e.path("input_dtypes").toString() + " x " + e.path("input_sizes").toString()
                    + root(e.path("root").asInt(-1));
            this.state = e.path("state").asText("");
            this.waitingFor = e.path("waiting_for_rank").asLong(-1);
            this.step = e.path("waiting_at_step").asLong(-1);
            this.error = e.path("error").isMissingNode() ? null : e.path("error").asText();
        }

        /**
         * The root field in a call's signature: a root, or a tag (an allReduceCoalesced's layout, -2 or less; the kind
         * of one of jccl's own allgathers, -3 to -6), which must agree as a root must; nothing for -1.
         */
        private static String root(int root) {
            return root >= 0 ? " root " + root : root == -1 ? "" : " tag " + root;
        }
    }

    @Override
    public Integer call() throws IOException {
        PrintStream out = System.out;
        if (!Files.isDirectory(dir)) {
            System.err.println("jccl analyze: " + dir + " is not a directory");
            return 2;
        }
        ObjectMapper json = new ObjectMapper();
        Map<Integer, JsonNode> records = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Matcher m = FILE.matcher(f.getFileName().toString());
                if (m.matches()) {
                    records.put(Integer.parseInt(m.group(1)), json.readTree(f.toFile()));
                }
            }
        }
        if (records.isEmpty()) {
            System.err.println("jccl analyze: no flight records (jccl_fr_rank<r>.json) in " + dir);
            return 1;
        }
        int world = 0;
        for (JsonNode r : records.values()) {
            world = Math.max(world, r.path("world_size").asInt(0));
        }
        List<Integer> noRecord = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            if (!records.containsKey(r)) {
                noRecord.add(r);
            }
        }
        out.println("jccl analyze: flight records of " + records.size() + " of " + world + " ranks in " + dir
                + (noRecord.isEmpty() ? "" : "; no record from " + ranks(noRecord)));
        for (Map.Entry<Integer, JsonNode> r : records.entrySet()) {
            String why = r.getValue().path("reason").asText();
            out.println("  rank " + r.getKey() + " wrote it: " + (why.length() > 160 ? why.substring(0, 157) + "..."
                    : why));
        }
        // communicator -> its members (world ranks), and rank -> seq -> call
        Map<Integer, List<Integer>> members = new TreeMap<>();
        Map<Integer, Map<Integer, TreeMap<Long, Call>>> calls = new TreeMap<>();
        Map<String, TreeSet<Integer>> reportedMissing = new TreeMap<>();
        for (Map.Entry<Integer, JsonNode> r : records.entrySet()) {
            JsonNode status = r.getValue().path("pg_status");
            Iterator<String> pgs = status.fieldNames();
            while (pgs.hasNext()) {
                String pg = pgs.next();
                List<Integer> m = new ArrayList<>();
                status.path(pg).path("members").forEach(n -> m.add(n.asInt()));
                members.putIfAbsent(Integer.parseInt(pg), m);
            }
            for (JsonNode e : r.getValue().path("entries")) {
                if (e.path("is_p2p").asBoolean(false)) {
                    continue;
                }
                int pg = e.path("pg_id").asInt();
                int world0 = r.getKey();
                calls.computeIfAbsent(pg, k -> new TreeMap<>()).computeIfAbsent(world0, k -> new TreeMap<>())
                        .put(e.path("collective_seq_id").asLong(), new Call(world0, e));
                String err = e.path("error").asText("");
                Matcher m = NEVER.matcher(err);
                while (m.find()) {
                    reportedMissing.computeIfAbsent(m.group(2), k -> new TreeSet<>()).add(Integer.parseInt(m.group(1)));
                }
            }
        }
        boolean found = false;
        for (Map.Entry<Integer, List<Integer>> pg : members.entrySet()) {
            found |= analyze(out, pg.getKey(), pg.getValue(), calls.getOrDefault(pg.getKey(), Map.of()), records,
                    reportedMissing);
        }
        if (!found) {
            out.println("every communicator: every rank with a record finished every call it recorded; nothing "
                    + "is stuck");
        }
        return 0;
    }

    /** The analysis of one communicator; whether it found a call that not every rank finished. */
    private static boolean analyze(PrintStream out, int pg, List<Integer> members,
                                   Map<Integer, TreeMap<Long, Call>> byRank, Map<Integer, JsonNode> records,
                                   Map<String, TreeSet<Integer>> reportedMissing) {
        // the first sequence number that some recording member did not complete
        long first = Long.MAX_VALUE;
        long highest = -1;
        for (int w : members) {
            TreeMap<Long, Call> mine = byRank.get(w);
            if (mine == null) {
                continue;
            }
            for (Call c : mine.values()) {
                highest = Math.max(highest, c.seq);
                if (!c.state.equals("completed")) {
                    first = Math.min(first, c.seq);
                }
            }
        }
        if (highest < 0) {
            return false;
        }
        // a member whose record stops before the others' also did not finish the call after its last
        for (int w : members) {
            TreeMap<Long, Call> mine = byRank.get(w);
            if (records.containsKey(w) && (mine == null || mine.lastKey() < highest)) {
                first = Math.min(first, mine == null ? 0 : mine.lastKey() + 1);
            }
        }
        if (first == Long.MAX_VALUE) {
            return false;
        }
        final long seq = first;
        String what = null;
        List<String> signatures = new ArrayList<>();
        for (int w : members) {
            Call c = byRank.getOrDefault(w, new TreeMap<>()).get(seq);
            if (c != null) {
                what = what == null ? c.op + " #" + seq : what;
                if (!signatures.contains(c.signature)) {
                    signatures.add(c.signature);
                }
            }
        }
        out.println();
        out.println("communicator " + pg + " (ranks " + members + "): the first call not every rank finished is "
                + (what == null ? "#" + seq : what));
        if (signatures.size() > 1) {
            out.println("  the ranks disagree on it:");
            for (int i = 0; i < members.size(); i++) {
                Call c = byRank.getOrDefault(members.get(i), new TreeMap<>()).get(seq);
                if (c != null) {
                    out.println("    rank " + i + ": " + c.signature);
                }
            }
        }
        List<Integer> entered = new ArrayList<>();
        List<String> never = new ArrayList<>();
        TreeSet<Integer> told = reportedMissing.getOrDefault(what == null ? "" : what, new TreeSet<>());
        for (int i = 0; i < members.size(); i++) {
            int w = members.get(i);
            TreeMap<Long, Call> mine = byRank.get(w);
            Call c = mine == null ? null : mine.get(seq);
            if (!records.containsKey(w)) {
                never.add("rank " + i + " left no record" + (told.contains(i) ? "; the ranks that timed out say it "
                        + "never entered " + what + " (it did not answer them)" : " (stopped, hung or killed before it "
                        + "could write one)"));
            } else if (c == null || c.state.equals("scheduled")) {
                Map.Entry<Long, Call> last = mine == null ? null : mine.lowerEntry(seq);
                never.add("rank " + i + " never entered " + (what == null ? "#" + seq : what)
                        + (last == null ? " (it recorded no earlier call)" : "; its last call is " + last.getValue().op
                        + " #" + last.getKey() + ", " + last.getValue().state));
            } else {
                entered.add(i);
            }
        }
        for (String n : never) {
            out.println("  " + n);
        }
        if (!entered.isEmpty()) {
            out.println("  " + ranks(entered) + (entered.size() == 1 ? " entered it:" : " entered it:"));
            for (int i : entered) {
                Call c = byRank.get(members.get(i)).get(seq);
                out.println("    rank " + i + ": " + c.state + (c.waitingFor >= 0 ? (c.state.equals("started")
                        ? ", waiting for rank " : ", last waited for rank ") + c.waitingFor + " at step " + c.step
                        : "") + (c.error == null || c.error.equals(records.get(members.get(i)).path("reason").asText())
                        ? "" : ": " + c.error));
            }
        }
        return true;
    }

    private static String ranks(List<Integer> r) {
        return (r.size() == 1 ? "rank " : "ranks ") + r.toString().replaceAll("[\\[\\]]", "");
    }
}
