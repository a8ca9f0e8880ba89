package io.jccl.it;

import io.jccl.cli.AnalyzeCommand;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Four real JVMs: one rank freezes (SIGSTOP) or is killed mid-job; every survivor names it, writes its flight
 * record, and {@code jccl analyze} on the records names the rank and the call it never made.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FlightRecorderProcessTest {

    private static Map<Integer, Map<String, String>> env(String transport, Path dir) {
        Map<Integer, Map<String, String>> m = new HashMap<>();
        for (int r = 0; r < 4; r++) {
            m.put(r, Map.of("JCCL_TRANSPORT", transport, "JCCL_FLIGHT_RECORDER_DIR", dir.toString()));
        }
        return m;
    }

    /** {@code jccl analyze dir}'s output; fails on a non-zero exit. */
    static String analyze(Path dir) {
        StringWriter out = new StringWriter();
        CommandLine cl = new CommandLine(new AnalyzeCommand());
        cl.setOut(new PrintWriter(out));
        java.io.ByteArrayOutputStream sysout = new java.io.ByteArrayOutputStream();
        java.io.PrintStream old = System.out;
        System.setOut(new java.io.PrintStream(sysout, true, java.nio.charset.StandardCharsets.UTF_8));
        int status;
        try {
            status = cl.execute(dir.toString());
        } finally {
            System.setOut(old);
        }
        String text = sysout.toString(java.nio.charset.StandardCharsets.UTF_8) + out;
        assertEquals(0, status, text);
        return text;
    }

    /**
     * A frozen rank that a peer sends more than the sockets' buffers hold (64 MiB over TCP): the write to it blocked
     * forever, and held every later write to it (an abort too) and the sender's close. The write now ends at the
     * call's deadline, and the send fails naming the frozen rank.
     */
    @org.junit.jupiter.api.Test
    void aFrozenRankThatLargeSendsWaitForIsNamedAtTheDeadline(@TempDir Path dir) throws Exception {
        try (ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("freeze-big", "3", "3000"),
                env("tcp", dir))) {
            assertNotNull(job.line(3, "FREEZE", 60), job.dump());
            assertEquals(0, job.await(0, 60), job.dump());
            String result = job.line(0, "RESULT", 1);
            assertNotNull(result, job.dump());
            System.out.println("frozen rank, large sends, rank 0: " + result);
            assertTrue(result.contains("CollectiveTimeoutException") && result.contains("to rank 3, which has not "
                    + "received them"), result);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aFrozenRankIsNamedByEverySurvivorAndByTheAnalysis(String transport, @TempDir Path dir) throws Exception {
        try (ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("freeze", "3", "3000"),
                env(transport, dir))) {
            assertNotNull(job.line(3, "FREEZE", 60), job.dump());
            for (int r = 0; r < 3; r++) {
                assertEquals(0, job.await(r, 60), job.dump());
                String result = job.line(r, "RESULT", 1);
                assertNotNull(result, job.dump());
                System.out.println("frozen rank over " + transport + ", rank " + r + ": " + result);
                assertTrue(result.contains("rank 3 never entered allReduce #5"), result);
                assertTrue(Files.exists(dir.resolve("jccl_fr_rank" + r + ".json")), "rank " + r + " wrote its record");
            }
            assertFalse(Files.exists(dir.resolve("jccl_fr_rank3.json")), "the frozen rank could write nothing");
        }
        String analysis = analyze(dir);
        System.out.println(analysis);
        assertTrue(analysis.contains("the first call not every rank finished is allReduce #5"), analysis);
        assertTrue(analysis.contains("rank 3 left no record; the ranks that timed out say it never entered "
                + "allReduce #5"), analysis);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void aKilledRankIsNamedInTheRecordsAndByTheAnalysis(String transport, @TempDir Path dir) throws Exception {
        try (ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("kill", "2", "300000"),
                env(transport, dir))) {
            assertEquals(137, job.await(2, 60), job.dump());
            for (int r : new int[] {0, 1, 3}) {
                assertEquals(0, job.await(r, 60), job.dump());
                String record = Files.readString(dir.resolve("jccl_fr_rank" + r + ".json"));
                assertTrue(record.contains("\"state\":\"failed\"") && record.contains("rank 2"), record);
            }
        }
        String analysis = analyze(dir);
        System.out.println(analysis);
        assertTrue(analysis.contains("the first call not every rank finished is allReduce #5"), analysis);
        assertTrue(analysis.contains("rank 2 left no record"), analysis);
        assertTrue(analysis.contains("died"), analysis);
    }
}
