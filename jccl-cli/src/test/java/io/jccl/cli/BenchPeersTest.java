package io.jccl.cli;

import io.jccl.OpType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A peer of {@code bench --compare gloo,mpi} that overruns its limit is stopped with every process it started:
 * before, the gloo script was killed without its mp.spawn workers, mpirun got SIGKILL (no chance to stop its
 * ranks, which ran on) and a hung mpicc was never stopped at all. Fake peers, short limits.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class BenchPeersTest {

    private static Path script(Path dir, String name, String body) throws Exception {
        return FakeProgram.script(dir, name, body);
    }

    private static long pid(Path file) throws Exception {
        return FakeProgram.pid(file);
    }

    /** Asserts the process in {@code pidFile} is gone (and kills it if not, not to leave it behind). */
    private static void assertGone(Path pidFile, String what) throws Exception {
        long pid = pid(pidFile);
        boolean alive = ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
        ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        assertFalse(alive, what + " (pid " + pid + ") survived");
    }

    private static BenchCommand bench() {
        BenchCommand b = new BenchCommand();
        b.ranks = 2;
        b.scale = 0.01;
        b.peerLimit = Duration.ofSeconds(2);
        b.compileLimit = Duration.ofSeconds(2);
        return b;
    }

    /** A sleeping child (its pid in {@code pidFile}), then waiting for it: a parent that hangs. */
    private static String hangWithAChild(Path pidFile) {
        return "sleep 3600 &\necho $! > " + pidFile + "\nwait";
    }

    @Test
    void aGlooRunPastItsLimitIsKilledWithItsWorkers(@TempDir Path dir) throws Exception {
        Path child = dir.resolve("worker.pid");
        BenchCommand b = bench();
        // answers the torch probe (python -c ...), hangs with a child as the benchmark script
        b.python = script(dir, "python", "if [ \"$1\" = -c ]; then echo 9.9.9; exit 0; fi\n"
                + hangWithAChild(child)).toString();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> b.glooTimes(OpType.ALL_REDUCE, new long[] {4}));
        assertTrue(e.getMessage().startsWith("gloo bench did not finish within 2 s"), e.getMessage());
        assertGone(child, "the gloo script's worker");
    }

    @Test
    void aHungMpiccIsStopped(@TempDir Path dir) throws Exception {
        Path child = dir.resolve("cc1.pid");
        BenchCommand b = bench();
        b.mpicc = script(dir, "mpicc", hangWithAChild(child)).toString();
        b.mpirun = "/nonexistent/mpirun";
        long start = System.nanoTime();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> b.mpiTimes(OpType.ALL_REDUCE, new long[] {4}));
        assertTrue(e.getMessage().startsWith("mpicc did not finish within 2 s"), e.getMessage());
        assertTrue(System.nanoTime() - start < 20_000_000_000L);
        assertGone(child, "mpicc's child");
    }

    /** mpirun is asked to stop first (SIGTERM: it stops its ranks), and what ignores that is killed after a grace. */
    @Test
    void anMpirunPastItsLimitIsAskedToStopItsRanksFirst(@TempDir Path dir) throws Exception {
        Path rank = dir.resolve("rank.pid");
        Path termed = dir.resolve("termed");
        BenchCommand b = bench();
        b.mpicc = script(dir, "mpicc", "touch \"$3\"").toString(); // mpicc -O2 -o EXE SRC
        b.mpirun = script(dir, "mpirun", "sleep 3600 &\nr=$!\necho $r > " + rank + "\n"
                + "trap 'echo TERM > " + termed + "; kill $r; exit 143' TERM\nwait").toString();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> b.mpiTimes(OpType.ALL_REDUCE, new long[] {4}));
        assertTrue(e.getMessage().startsWith("mpirun did not finish within 2 s"), e.getMessage());
        assertTrue(Files.exists(termed), "mpirun was not sent SIGTERM");
        assertEquals("TERM", Files.readString(termed).trim());
        assertGone(rank, "mpirun's rank");

        // an mpirun that ignores SIGTERM: killed after the grace period, with its ranks
        Path rank2 = dir.resolve("rank2.pid");
        b.mpirun = script(dir, "mpirun2", "trap '' TERM\n" + hangWithAChild(rank2)).toString();
        IllegalStateException e2 = assertThrows(IllegalStateException.class,
                () -> b.mpiTimes(OpType.ALL_REDUCE, new long[] {4}));
        assertTrue(e2.getMessage().startsWith("mpirun did not finish"), e2.getMessage());
        assertGone(rank2, "the rank of an mpirun that ignored SIGTERM");
    }

    /**
     * A run whose peer fails (here mpicc is not found) removes the directories it made for its --json and --plot
     * files before it measured anything, and only those: they were left behind, empty.
     */
    @Test
    void aRunWhosePeerFailsLeavesNoDirectoryItMade(@TempDir Path dir) throws Exception {
        Path theirs = Files.writeString(dir.resolve("notes.txt"), "kept"); // the user's, in a directory of theirs
        Path json = dir.resolve("out/rows/rows.json");
        Path png = dir.resolve("out/plots/busbw.png");
        BenchCommand b = new BenchCommand();
        b.mpicc = dir.resolve("no-mpicc-here").toString();
        java.io.StringWriter err = new java.io.StringWriter();
        java.io.PrintStream oldErr = System.err;
        int status;
        try {
            System.setErr(new java.io.PrintStream(new java.io.ByteArrayOutputStream(), true)); // bench's progress
            status = new picocli.CommandLine(b).setErr(new java.io.PrintWriter(err, true))
                    .setExecutionExceptionHandler(new Failure()).execute("--ranks", "2", "--sizes", "4", "--scale",
                            "0.01", "--compare", "mpi", "--json", json.toString(), "--plot", png.toString());
        } finally {
            System.setErr(oldErr);
        }
        assertEquals(1, status, err.toString());
        assertTrue(err.toString().contains("--compare mpi: mpicc not found"), err.toString());
        assertFalse(Files.exists(dir.resolve("out")), "left behind: " + dir.resolve("out"));
        assertEquals("kept", Files.readString(theirs));
    }
}
