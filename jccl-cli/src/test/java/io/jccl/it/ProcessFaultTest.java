package io.jccl.it;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Real JVM processes over TCP and shared memory: a rank killed, a rank that stalls, a wrong secret. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ProcessFaultTest {

    private static Map<Integer, Map<String, String>> env(String transport) {
        Map<Integer, Map<String, String>> m = new java.util.HashMap<>(); // mutable: trials override a rank
        for (int r = 0; r < 8; r++) {
            m.put(r, Map.of("JCCL_TRANSPORT", transport));
        }
        return m;
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void shouldNameTheRankKilledMidCollectiveOnEverySurvivor(String transport) throws Exception {
        killTrial(transport, false);
    }

    /** The killed rank's parent never reaps it: a zombie, whose pid still "is alive" to ProcessHandle. */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void shouldNameARankKilledAndLeftAZombieOnEverySurvivor(String transport) throws Exception {
        killTrial(transport, true);
    }

    private static void killTrial(String transport, boolean zombie) throws Exception {
        Map<Integer, Map<String, String>> env = env(transport);
        if (zombie) {
            env.put(2, Map.of("JCCL_TRANSPORT", transport, ProcessJob.ZOMBIE_PARENT, "1"));
        }
        // a 5 minute deadline: survivors must learn of the death from the connection, not the clock
        try (ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("kill", "2", "300000"), env)) {
            if (!zombie) {
                assertEquals(137, job.await(2, 60), job.dump());
            }
            String kill = job.line(2, "KILL", 60);
            assertNotNull(kill, job.dump());
            long killedAt = Long.parseLong(kill.substring(5));
            for (int r : new int[] {0, 1, 3}) {
                assertEquals(0, job.await(r, 60), job.dump());
                String result = job.line(r, "RESULT", 1);
                assertNotNull(result, job.dump());
                assertTrue(result.startsWith("RESULT PeerAbortedException origin=2 "), result);
                assertTrue(result.contains("rank 2") && result.contains("died"), result);
                long detectMs = Long.parseLong(job.line(r, "DETECTED", 1).substring(9)) - killedAt;
                System.out.println("kill -9" + (zombie ? " (zombie)" : "") + " over " + transport + ": rank " + r
                        + " named rank 2 after " + detectMs + " ms");
                assertTrue(detectMs < 5000, "rank " + r + " took " + detectMs + " ms\n" + job.dump());
            }
            if (zombie) {
                // the premise: rank 2's JVM is a child of the never-reaping parent, which is the process started
                assertFalse(job.processes.get(2).pid() == job.rankPid(2, 1), job.dump());
            }
            // survivors removed their own segments on close, and the dead rank's when they saw it die (by the pids
            // the ranks' JVMs printed: the zombie's is not the started process's)
            List<String> left = job.leftoverSegments();
            assertTrue(left.isEmpty(), () -> "left behind: " + left);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void shouldTimeOutOnARankThatStalls(String transport) throws Exception {
        try (ProcessJob job = ProcessJob.start(3, FaultWorker.class, List.of("stall", "1", "2000"), env(transport))) {
            // rank 0 receives from rank 1 and has the shortest deadline: it times out naming rank 1
            assertEquals(0, job.await(0, 60), job.dump());
            String r0 = job.line(0, "RESULT", 1);
            assertNotNull(r0, job.dump());
            assertTrue(r0.startsWith("RESULT CollectiveTimeoutException origin=-1 peer=1 "), r0);
            // rank 2 is told, before its own deadline, and the reason names the staller
            assertEquals(0, job.await(2, 60), job.dump());
            String r2 = job.line(2, "RESULT", 1);
            assertNotNull(r2, job.dump());
            assertTrue(r2.startsWith("RESULT PeerAbortedException origin=0 ") && r2.contains("rank 1 never entered"),
                    r2);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void shouldRefuseARankWithTheWrongSecret(String transport) throws Exception {
        Map<Integer, Map<String, String>> env = Map.of(1, Map.of("JCCL_SECRET", "00ff", "JCCL_CONNECT_TIMEOUT_MS",
                "3000", "JCCL_TRANSPORT", transport), 0, Map.of("JCCL_CONNECT_TIMEOUT_MS", "3000", "JCCL_TRANSPORT",
                transport));
        try (ProcessJob job = ProcessJob.start(2, FaultWorker.class, List.of("ok", "-1", "5000"), env)) {
            int s1 = job.await(1, 60);
            int s0 = job.await(0, 60);
            assertFalse(s1 == 0, job.dump());
            assertFalse(s0 == 0, job.dump());
            String out = job.dump();
            assertTrue(out.contains("failed to prove the job secret"), out);
            assertTrue(out.contains("rank 1 never joined within 3000 ms; joined: rank 0 (pid"), out);
            // and rank 0 says why: its store refused a client whose secret differs
            assertTrue(out.contains("the store refused 1 connection: connection closed during the handshake (proof): "
                    + "the client closed it after this server's proof of the job secret, as a jccl client does when "
                    + "that proof does not verify (its JCCL_SECRET differs"), out);
        }
    }

    /**
     * Another thread of rank 1 closes its communicator during its allreduces: rank 1's call ends at once with an
     * error that says so (over shm this used to kill the JVM with SIGSEGV), every other rank names rank 1, and
     * no process is left running and no segment left behind.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void shouldSurviveACloseDuringACall(String transport) throws Exception {
        try (ProcessJob job = ProcessJob.start(3, FaultWorker.class, List.of("close", "1", "300000"), env(transport))) {
            for (int r = 0; r < 3; r++) {
                assertEquals(0, job.await(r, 60), "rank " + r + "\n" + job.dump());
                String result = job.line(r, "RESULT", 1);
                assertNotNull(result, job.dump());
                if (r == 1) {
                    System.out.println("close during a call over " + transport + ": " + result);
                    // ended in flight, or (if the close fell between two calls) refused at the next call
                    assertTrue(result.startsWith("RESULT CommunicatorAbortedException ")
                            && (result.contains("ended: rank 1 closed its communicator during the call")
                            || result.contains("refused: the communicator is closed")), result);
                } else {
                    assertTrue(result.startsWith("RESULT PeerAbortedException origin=1 ")
                            && result.contains("rank 1 closed its communicator"), result);
                }
            }
            List<String> left = job.leftoverSegments();
            assertTrue(left.isEmpty(), () -> "left behind: " + left);
        }
    }

    /**
     * Ranks 0 and 1 have a tuning file that makes latency dear, ranks 2 and 3 one that makes bandwidth dear (as
     * when `jccl tune` ran on one host only): AUTO chose different algorithms on the two halves and a
     * correct program failed with a mismatch in algorithm (BRUCK against RING for allgather). Every rank now uses rank 0's parameters.
     */
    @org.junit.jupiter.api.Test
    void shouldChooseAlikeWhereTuningFilesDiffer(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        java.nio.file.Path latencyDear = dir.resolve("latency.properties");
        java.nio.file.Path bandwidthDear = dir.resolve("bandwidth.properties");
        java.nio.file.Files.writeString(latencyDear, "tcp.link.alpha_us=100000\ntcp.link.beta_us_per_byte=0.000001\n");
        java.nio.file.Files.writeString(bandwidthDear, "tcp.link.alpha_us=0.001\ntcp.link.beta_us_per_byte=10\n");
        // the premise: the two files alone make AUTO choose differently for this job's allgather (Bruck, ring)
        io.jccl.Algorithm a = new io.jccl.pipeline.AlgorithmSelector(io.jccl.pipeline.CostModel.load(latencyDear),
                "tcp", 0, 4).choose(io.jccl.OpType.ALL_GATHER, 4L << 12);
        io.jccl.Algorithm b = new io.jccl.pipeline.AlgorithmSelector(io.jccl.pipeline.CostModel.load(bandwidthDear),
                "tcp", 0, 4).choose(io.jccl.OpType.ALL_GATHER, 4L << 12);
        assertFalse(a == b, "both files choose " + a);
        Map<Integer, Map<String, String>> env = new java.util.HashMap<>();
        for (int r = 0; r < 4; r++) {
            env.put(r, Map.of("JCCL_TRANSPORT", "tcp", "JCCL_TUNE_FILE", (r < 2 ? latencyDear : bandwidthDear)
                    .toString()));
        }
        try (ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("allgather", "-1", "60000"), env)) {
            for (int r = 0; r < 4; r++) {
                assertEquals(0, job.await(r, 60), job.dump());
                assertEquals("RESULT ok", job.line(r, "RESULT", 1), job.dump());
            }
        }
    }

    /**
     * Parameters that programs give (not a file): rank 0 gives latency-dear ones, rank 1 none, ranks 2 and 3
     * bandwidth-dear ones. Before, every rank that was given parameters used its own (AUTO chose BRUCK on some ranks
     * and RING on others: a mismatch), and a rank given none waited at start for the file's parameters that rank 0,
     * given its own, never published (until the connect deadline). Now rank 0's are every rank's, and the ranks
     * whose own differ say so.
     */
    @org.junit.jupiter.api.Test
    void shouldChooseAlikeWhereProgramsGiveDifferentParameters() throws Exception {
        String latencyDear = "tcp.link.alpha_us=100000;tcp.link.beta_us_per_byte=0.000001";
        String bandwidthDear = "tcp.link.alpha_us=0.001;tcp.link.beta_us_per_byte=10";
        // the premise: alone, the two make AUTO choose differently for this job's allgather (Bruck, ring)
        assertFalse(new io.jccl.pipeline.AlgorithmSelector(io.jccl.pipeline.CostModel.parse(latencyDear.replace(';',
                '\n')), "tcp", 0, 4).choose(io.jccl.OpType.ALL_GATHER, 4L << 12)
                == new io.jccl.pipeline.AlgorithmSelector(io.jccl.pipeline.CostModel.parse(bandwidthDear.replace(';',
                '\n')), "tcp", 0, 4).choose(io.jccl.OpType.ALL_GATHER, 4L << 12), "both choose alike");
        Map<Integer, Map<String, String>> env = new java.util.HashMap<>();
        for (int r = 0; r < 4; r++) {
            Map<String, String> e = new java.util.HashMap<>(Map.of("JCCL_TRANSPORT", "tcp"));
            if (r != 1) {
                e.put("FAULT_TUNE_TEXT", r == 0 ? latencyDear : bandwidthDear);
            }
            env.put(r, e);
        }
        try (ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("allgather", "-1", "20000"), env)) {
            for (int r = 0; r < 4; r++) {
                assertEquals(0, job.await(r, 60), job.dump());
                assertEquals("RESULT ok", job.line(r, "RESULT", 1), job.dump());
            }
            assertTrue(job.dump().contains("rank 2: the tuning parameters its program gave differ from rank 0's"),
                    job.dump());
        }
    }
}
