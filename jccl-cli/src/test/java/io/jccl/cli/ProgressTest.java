package io.jccl.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 14, item 10: long commands print their progress on stderr, a line per finished step when stderr is not a
 * terminal (as here: tests run without one), while stdout keeps exactly its tables and JSON.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ProgressTest {

    private static List<String> progressLines(String err, String command) {
        return err.lines().filter(l -> l.startsWith(command + ": ")).collect(Collectors.toList());
    }

    @Test
    void onATerminalOneLineUpdatesInPlaceAndIsClearedAtTheEnd() {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        Progress p = new Progress(new PrintStream(buf, true, StandardCharsets.UTF_8), true, "jccl x");
        p.update(0, 4, "first, a longer text");
        p.step(1, 4, "one");
        p.wrote(Path.of("out.png"));
        p.clear();
        String s = buf.toString(StandardCharsets.UTF_8);
        assertFalse(s.contains("\n" + "jccl x"), "no line of its own: " + s);
        assertTrue(s.startsWith("\r[-----"), s);
        assertTrue(s.contains("\r[#####---------------] jccl x: 1/4 one ("), s);
        // the longer first text is blanked out when the shorter one is drawn over it
        assertTrue(s.contains(" ".repeat(5) + "\r[#####"), s);
        assertTrue(s.contains("\rwrote out.png\n"), s);
        assertEquals(1, s.lines().filter(l -> l.contains("wrote")).count(), s);
    }

    @Test
    void offATerminalEachStepIsALineAndUpdatesAreSilent() {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        Progress p = new Progress(new PrintStream(buf, true, StandardCharsets.UTF_8), false, "jccl x");
        p.update(0, 2, "starting");
        p.step(1, 2, "a done");
        p.update(1, 2, "b");
        p.step(2, 2, "b done");
        p.clear();
        List<String> lines = buf.toString(StandardCharsets.UTF_8).lines().collect(Collectors.toList());
        assertEquals(2, lines.size(), lines.toString());
        assertTrue(lines.get(0).matches("jccl x: 1/2 a done \\(\\d+ s\\)"), lines.toString());
        assertTrue(lines.get(1).matches("jccl x: 2/2 b done \\(\\d+ s\\)"), lines.toString());
        assertFalse(buf.toString(StandardCharsets.UTF_8).contains("\r"));
    }

    /** Whether progress draws in place is decided by where stderr goes, where the progress is written. */
    @Test
    void aTerminalIsWhereStderrGoes() {
        java.util.function.BooleanSupplier consoleYes = () -> true;
        java.util.function.BooleanSupplier consoleNo = () -> false;
        assertTrue(Progress.onTerminal("/dev/pts/3", "xterm-256color", consoleNo)); // jccl bench > out.txt
        assertTrue(Progress.onTerminal("/dev/tty1", null, consoleNo));
        assertTrue(Progress.onTerminal("/dev/console", "linux", consoleNo));
        assertFalse(Progress.onTerminal("/tmp/bench.log", "xterm", consoleYes)); // jccl bench 2>bench.log
        assertFalse(Progress.onTerminal("pipe:[123456]", "xterm", consoleYes)); // jccl bench 2>&1 | tee
        assertFalse(Progress.onTerminal("/dev/null", "xterm", consoleYes));
        assertFalse(Progress.onTerminal("/dev/pts/3", "dumb", consoleYes));
        // no /proc (not Linux): the JDK's answer for stdin and stdout
        assertTrue(Progress.onTerminal(null, "xterm", consoleYes));
        assertFalse(Progress.onTerminal(null, "xterm", consoleNo));
    }

    /**
     * {@code jccl bench 2>bench.log} run from a terminal (stdin and stdout on one, as {@code script} gives them): the
     * log filled with carriage returns and bars; it gets a line per finished step.
     */
    @Test
    void stderrToAFileFromATerminalGetsLinesNotBars(@TempDir Path dir) throws Exception {
        boolean script = Files.isExecutable(Path.of("/usr/bin/script"));
        if ("true".equalsIgnoreCase(System.getenv("CI"))) { // CI runs it, as the gloo and bed tests
            assertTrue(script, "CI=true but /usr/bin/script (bsdutils, Debian's essential set) is missing");
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(script, "needs script (bsdutils) for a terminal");
        Path log = dir.resolve("bench.log");
        String java = ProcessHandle.current().info().command().orElse("java");
        String cmd = "'" + java + "' -cp '" + System.getProperty("java.class.path") + "' io.jccl.cli.Main bench "
                + "--ranks 2 --sizes 4 --scale 0.01 2>'" + log + "'";
        Process p = new ProcessBuilder("/usr/bin/script", "-qec", cmd, "/dev/null").redirectErrorStream(true)
                .redirectOutput(dir.resolve("terminal.txt").toFile()).start();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "jccl bench did not finish");
        String err = Files.readString(log);
        assertEquals(0, p.exitValue(), err + Files.readString(dir.resolve("terminal.txt")));
        assertFalse(err.contains("\r"), "bars in the log: " + err.replace("\r", "\\r"));
        assertTrue(progressLines(err, "jccl bench").get(0).startsWith("jccl bench: 1/1 all_reduce AUTO measured"),
                err);
    }

    @Test
    void benchPrintsAStepPerAlgorithmOnStderrAndOnlyTheTableOnStdout(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("rows.json");
        Cli r = Cli.run("bench", "--ranks", "2", "--ops", "allreduce,allgather", "--algorithms", "auto,ring",
                "--sizes", "4,1K", "--scale", "0.01", "--json", json.toString());
        assertEquals(0, r.status, r.both());
        List<String> steps = progressLines(r.err, "jccl bench");
        assertEquals(4, steps.size(), r.both());
        assertTrue(steps.get(0).startsWith("jccl bench: 1/4 all_reduce AUTO measured"), r.both());
        assertTrue(steps.get(3).startsWith("jccl bench: 4/4 all_gather RING measured"), r.both());
        assertTrue(r.err.lines().anyMatch(l -> l.equals("wrote " + json)), r.both());
        // stdout: the title, per op a blank line, its name and the header, then the rows, nothing else; two ranks
        // that fit the cores end each row with their cores' round trip (ns), measured just before it
        boolean roundTrip = io.jccl.bench.CoreRoundTrip.applies(false, 2, Runtime.getRuntime().availableProcessors());
        int rows = 0;
        for (String l : r.out.lines().collect(Collectors.toList())) {
            if (l.isEmpty() || l.startsWith("# ") || l.trim().startsWith("size ")) {
                continue;
            }
            assertTrue(l.trim().matches("\\d+ +\\d+ +float +(sum|-) +- +\\S+ +[\\d.]+ +[\\d.]+ +[\\d.]+ +0 +[\\d.]+ +\\S+"
                    + (roundTrip ? " +\\d+" : "")), "not a row: " + l + "\n" + r.both());
            rows++;
        }
        assertEquals(2 * 2 * 2, rows, r.both());
        assertTrue(r.out.startsWith("# jccl bench: 2 ranks as threads"), r.both());
        assertTrue(progressLines(r.out, "jccl bench").isEmpty(), r.both());
        assertFalse(r.out.contains("wrote") || r.out.contains("\r"), r.both());
        assertTrue(Files.size(json) > 0);
    }

    @Test
    void verifyPrintsAStepPerPrimitiveWhileStdoutStaysJson() throws Exception {
        Cli r = Cli.run("verify", "--primitive", "all_reduce,broadcast", "--dtype", "float32,int32", "--op", "sum",
                "--count", "9", "--world", "2,3", "--reference", "java", "--json");
        assertEquals(0, r.status, r.both());
        List<String> steps = progressLines(r.err, "jccl verify");
        assertEquals(List.of("jccl verify: 2/8 all_reduce, world 2 done", "jccl verify: 4/8 broadcast, world 2 done",
                "jccl verify: 6/8 all_reduce, world 3 done", "jccl verify: 8/8 broadcast, world 3 done"),
                steps.stream().map(l -> l.replaceAll(" \\(\\d+ s\\)$", "")).collect(Collectors.toList()), r.both());
        JsonNode report = new ObjectMapper().readTree(r.out);
        assertEquals(8, report.get("rows").size(), r.out);
        assertEquals("threads", report.get("transport").asText());
    }

    /** Rows checked against the Java model are counted apart: they check jccl against its own reduction code. */
    @Test
    void verifySaysHowManyRowsItComparedWithTheJavaModelRatherThanGloo() {
        Cli r = Cli.run("verify", "--primitive", "all_reduce", "--dtype", "float32", "--op", "sum", "--count", "9",
                "--world", "2", "--reference", "java");
        assertEquals(0, r.status, r.both());
        assertTrue(r.out.contains("0 of the rows compared were compared with gloo, 1 with the Java model (a check of "
                + "jccl against its own reduction code, not against gloo)"), r.out);
    }

    @Test
    void trainPrintsAStepPerTrainingRunAndTheFileItWrote(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("loss.png");
        Cli r = Cli.run("train", "--ranks", "2", "--steps", "3", "--modes", "ddp,zero", "--skip-patterns", "--plot",
                png.toString());
        assertEquals(0, r.status, r.both());
        List<String> steps = progressLines(r.err, "jccl train").stream()
                .map(l -> l.replaceAll(" \\(\\d+ s\\)$", "")).collect(Collectors.toList());
        assertEquals(List.of("jccl train: 1/3 single rank trained", "jccl train: 2/3 ddp on 2 ranks trained",
                "jccl train: 3/3 zero on 2 ranks trained"), steps, r.both());
        assertTrue(r.err.lines().anyMatch(l -> l.equals("wrote " + png)), r.both());
        assertTrue(r.out.startsWith("jccl train: MLP"), r.both());
        assertFalse(r.out.contains("trained") || r.out.contains("\r"), r.both());
    }

    /** tune's steps and the file it wrote on stderr, as the other commands': "wrote FILE" was on stdout. */
    @Test
    void tunePrintsAStepPerMeasurementAndTheFileItWrote(@TempDir Path dir) {
        Path file = dir.resolve("tune.properties");
        Cli r = Cli.run("tune", "--transport", "threads", "--ranks", "2", "--large", "64K", "--scale", "0.01",
                "--output", file.toString());
        assertEquals(0, r.status, r.both());
        List<String> steps = progressLines(r.err, "jccl tune").stream()
                .map(l -> l.replaceAll(" \\(\\d+ s\\)$", "")).collect(Collectors.toList());
        assertEquals(List.of("jccl tune: 1/2 ring allreduce measured", "jccl tune: 2/2 shared-memory allreduce measured"),
                steps, r.both());
        assertTrue(r.out.startsWith("threads messages (2 ranks): ring allreduce"), r.both());
        assertTrue(r.err.lines().anyMatch(l -> l.equals("wrote " + file)), r.both());
        assertFalse(r.out.contains("wrote"), r.both());
    }
}
