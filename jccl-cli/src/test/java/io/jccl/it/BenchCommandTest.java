package io.jccl.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jccl.cli.Main;
import io.jccl.verify.GlooReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** jccl bench end to end (a short run: timings are printed, never asserted). */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class BenchCommandTest {

    /** Runs the jccl command line in this JVM with {@code args}; asserts status 0; returns what it printed. */
    static String run(String... args) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream old = System.out;
        try {
            System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
            int status = new CommandLine(new Main()).execute(args);
            assertEquals(0, status, buf.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(old);
        }
        return buf.toString(StandardCharsets.UTF_8);
    }

    @Test
    void shouldPrintNcclTestsColumnsWithNoWrongResults(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("rows.json");
        Path png = dir.resolve("busbw.png");
        String out = run("bench", "--ranks", "3", "--transport", "shm", "--ops", "allreduce,allgather,reducescatter,"
                + "broadcast,alltoall,reduce", "--algorithms", "auto,ring,tree,shared_memory", "--sizes", "4,1K,100K", "--scale", "0.02",
                "--json", json.toString(), "--plot", png.toString(), "--late-peer", "0.3");
        assertTrue(out.contains("# late peer: rank 0 arrived"), out);
        assertTrue(out.contains("size        count    type  redop  root          algorithm     time(us)     algbw     "
                + "busbw  #wrong   cpu(us)  inplace(us)"), out);
        JsonNode rows = new ObjectMapper().readTree(json.toFile()).get("rows");
        // AUTO, and: allreduce: ring, tree, shared memory; allgather, reduce_scatter: ring, shared memory; broadcast:
        // tree, shared memory; all_to_all: none of those; reduce: ring, shared memory
        assertEquals(3 * (12 + 5), rows.size(), rows.toString());
        // AUTO against the fastest explicit row, a line per size, for every collective with an explicit row
        for (String op : new String[] {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"}) {
            assertTrue(out.contains("# " + op + ": AUTO's time over the fastest explicit row's, by size"), out);
        }
        assertTrue(!out.contains("# all_to_all: AUTO's time"), out);
        assertEquals(5 * 3, out.lines().filter(l -> l.matches("# +\\d+ +\\d+\\.\\d\\d  AUTO:\\w+, best \\w+ .*"))
                .count(), out);
        for (JsonNode r : rows) {
            assertEquals(0, r.get("wrong").asLong(), r.toString());
            assertTrue(r.get("timeUs").asDouble() > 0);
        }
        assertTrue(Files.size(png) > 10_000);
    }

    @Test
    void shouldRunEveryRowInInterleavedRoundsAndShowTheMedianOfTheirRuns(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("rows.json");
        String out = run("bench", "--ranks", "2", "--algorithms", "auto,ring,tree", "--sizes", "4,1K", "--scale",
                "0.02", "--rounds", "3", "--json", json.toString());
        assertTrue(out.lines().findFirst().orElseThrow().endsWith("; median of 3 interleaved runs"), out);
        JsonNode rows = new ObjectMapper().readTree(json.toFile()).get("rows");
        assertEquals(3 * 2, rows.size(), rows.toString());
        for (JsonNode r : rows) {
            JsonNode each = r.get("runsTimeUs");
            assertEquals(3, each.size(), r.toString());
            double[] t = {each.get(0).asDouble(), each.get(1).asDouble(), each.get(2).asDouble()};
            java.util.Arrays.sort(t);
            assertEquals(t[1], r.get("timeUs").asDouble(), 0, r.toString());
            assertTrue(t[0] > 0, r.toString());
        }
        assertEquals(2, out.lines().filter(l -> l.matches("# +\\d+ +\\d+\\.\\d\\d  AUTO:\\w+, best \\w+ .*"))
                .count(), out);
    }

    /**
     * A run that fails removes the directories it made for its --json and --plot files, and only those: here --plot
     * names a directory, a usage error found once --json's missing directories were made; then a --json path whose
     * upper directory could be made and whose deeper one could not (a name too long). Both were left behind.
     */
    @Test
    void aFailedRunLeavesNoDirectoryItMade(@TempDir Path dir) throws Exception {
        Path before = Files.createDirectory(dir.resolve("before")); // the user's, with a file of theirs
        Path theirs = Files.writeString(before.resolve("notes.txt"), "kept");
        String err = failedBench(2, "--json", before.resolve("made/for/rows.json").toString(), "--plot",
                before.toString());
        assertTrue(err.contains("Invalid value for option '--plot': " + before + " is a directory"), err);
        assertFalse(Files.exists(before.resolve("made")), "left behind: " + before.resolve("made"));

        err = failedBench(2, "--json", before.resolve("made").resolve("x".repeat(300)).resolve("rows.json")
                .toString());
        assertTrue(err.contains("Invalid value for option '--json': cannot make the directory"), err);
        assertFalse(Files.exists(before.resolve("made")), "left behind: " + before.resolve("made"));
        assertEquals("kept", Files.readString(theirs));
        try (java.util.stream.Stream<Path> left = Files.list(before)) {
            assertEquals(List.of(theirs), left.toList(), "only the user's file is left in " + before);
        }
    }

    @Test
    void aFailedTuneLeavesNoDirectoryItMade(@TempDir Path dir) {
        // the link's rate is read when the bed comes up, after --output's directories were made
        java.io.StringWriter err = new java.io.StringWriter();
        int s = Main.commandLine().setErr(new java.io.PrintWriter(err, true)).execute("tune", "--hosts", "2",
                "--link", "bogus", "--output", dir.resolve("made/for/tune.properties").toString());
        assertEquals(1, s, err.toString());
        assertTrue(err.toString().contains("--link takes a rate such as 1gbit or 100mbit, got 'bogus'"), err.toString());
        assertFalse(Files.exists(dir.resolve("made")), "left behind: " + dir.resolve("made"));
    }

    /** Runs a short bench with {@code args} too; asserts it ends with {@code status}; returns its stderr. */
    private static String failedBench(int status, String... args) {
        java.io.StringWriter err = new java.io.StringWriter();
        List<String> all = new java.util.ArrayList<>(List.of("bench", "--ranks", "2", "--sizes", "4", "--scale",
                "0.01"));
        all.addAll(List.of(args));
        int s = Main.commandLine().setErr(new java.io.PrintWriter(err, true)).execute(all.toArray(new String[0]));
        assertEquals(status, s, err.toString());
        return err.toString();
    }

    /**
     * With two ranks that fit the cores, both jccl's ranks and Open MPI's measure the round trip between rank 0's and
     * rank 1's cores before each row (io.jccl.bench.CoreRoundTrip, mpi_bench.c's "rtt"), shown as jccl/Open MPI
     * nanoseconds and kept in --json; a ratio whose two sides ran more than 1.5x apart in that round trip is marked
     * (which ranks measure it: CoreRoundTripTest). Outside CI without Open MPI this is reported as skipped; in CI
     * Open MPI is required (scripts/test.sh installs it) and a missing one fails.
     */
    @Test
    void shouldMeasureTheCoresRoundTripBesideEachRowOfJcclAndOpenMpi(@TempDir Path dir) throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(onPath("mpicc") && onPath("mpirun")
                || "true".equalsIgnoreCase(System.getenv("CI")), "Open MPI (mpicc, mpirun) not on the PATH");
        Path json = dir.resolve("rows.json");
        String out = run("bench", "--transport", "shm", "--ranks", "2", "--ops", "allreduce", "--sizes", "4,1K",
                "--scale", "0.05", "--compare", "mpi", "--json", json.toString());
        boolean fits = Runtime.getRuntime().availableProcessors() >= 2;
        assertEquals(fits, out.lines().anyMatch(l -> l.matches(".* mpi\\(us\\) +mpi/jccl +rtt\\(ns\\)")), out);
        JsonNode rows = new ObjectMapper().readTree(json.toFile()).get("rows");
        assertEquals(2, rows.size(), rows.toString());
        for (JsonNode r : rows) {
            assertTrue(r.get("mpiTimeUs").asDouble() > 0, r.toString());
            assertEquals(fits, r.has("coreRoundTripNs") && r.has("mpiCoreRoundTripNs"), r.toString());
            if (fits) { // a core-to-core round trip takes tens to hundreds of nanoseconds, never nothing
                double jccl = r.get("coreRoundTripNs").asDouble();
                double mpi = r.get("mpiCoreRoundTripNs").asDouble();
                assertTrue(jccl > 5 && jccl < 1e6 && mpi > 5 && mpi < 1e6, r.toString());
                String cell = String.format(java.util.Locale.ROOT, "%.0f/%.0f", jccl, mpi);
                assertTrue(out.lines().anyMatch(l -> l.trim().startsWith(r.get("bytes").asText() + " ")
                        && l.endsWith(" " + cell)), cell + " in\n" + out);
                boolean apart = Math.max(jccl, mpi) > 1.5 * Math.min(jccl, mpi);
                assertEquals(apart, out.lines().anyMatch(l -> l.trim().startsWith(r.get("bytes").asText() + " ")
                        && l.contains("* ")), out);
            }
        }
    }

    private static boolean onPath(String command) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (!d.isEmpty() && Files.isExecutable(Path.of(d, command))) {
                return true;
            }
        }
        return false;
    }

    @Test
    void shouldMeasureGlooInTheSameRun() {
        String[] why = new String[1];
        // outside CI without torch this is reported as skipped; in CI torch is required and a missing one fails
        org.junit.jupiter.api.Assumptions.assumeTrue(GlooReference.find(why) != null
                || "true".equalsIgnoreCase(System.getenv("CI")), "torch not found: " + why[0]);
        String out = run("bench", "--ranks", "2", "--sizes", "1K,64K", "--scale", "0.02", "--compare", "gloo");
        assertTrue(out.contains("gloo(us)  gloo/jccl"), out);
        assertEquals(2, out.lines().filter(l -> l.trim().matches("\\d+ +\\d+ +float .*")).count(), out);
    }

    @Test
    void tuneShouldStoreTheModelAndAutoShouldReadIt(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("tune.properties");
        String out = run("tune", "--transport", "threads", "--ranks", "2", "--large", "256K", "--scale", "0.02",
                "--output", file.toString());
        assertTrue(out.contains("AUTO on 2 ranks over threads now picks:"), out);
        java.util.Properties p = new java.util.Properties();
        try (java.io.InputStream in = Files.newInputStream(file)) {
            p.load(in);
        }
        double alpha = Double.parseDouble(p.getProperty("local.link.alpha_us"));
        double beta = Double.parseDouble(p.getProperty("local.arena.beta_us_per_byte"));
        assertTrue(alpha > 0 && beta > 0, p.toString());
        io.jccl.pipeline.CostModel model = io.jccl.pipeline.CostModel.load(file);
        assertEquals(alpha, model.link("local")[0]);
    }

    /**
     * {@code --choices}: every algorithm of allreduce, broadcast and reduce measured at four sizes, a choice per size
     * in the file, which AUTO on that transport and world size then follows.
     */
    @Test
    void tuneWithChoicesShouldStoreAChoicePerOperationAndSize(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("tune.properties");
        String out = run("tune", "--transport", "threads", "--ranks", "2", "--large", "64K", "--scale", "0.02",
                "--choices", "--output", file.toString());
        assertTrue(out.contains("Measured choices (2 ranks over threads)"), out);
        java.util.Properties p = new java.util.Properties();
        try (java.io.InputStream in = Files.newInputStream(file)) {
            p.load(in);
        }
        io.jccl.pipeline.CostModel model = io.jccl.pipeline.CostModel.load(file);
        for (io.jccl.OpType op : new io.jccl.OpType[] {io.jccl.OpType.ALL_REDUCE, io.jccl.OpType.BROADCAST,
                io.jccl.OpType.REDUCE}) {
            for (long bytes : new long[] {4, 1 << 10, 64 << 10, 1 << 20}) {
                String key = "local.choice." + op.name() + ".2." + bytes;
                assertTrue(p.containsKey(key), key + " in " + p);
                assertEquals(io.jccl.Algorithm.valueOf(p.getProperty(key)), model.choice("local", op, 2, bytes));
            }
        }
    }
}
