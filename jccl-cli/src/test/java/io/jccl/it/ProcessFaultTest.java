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
        Map<Integer, Map<String, String>> m = new java.util.HashMap<>();
        for (int r = 0; r < 8; r++) {
            m.put(r, Map.of("JCCL_TRANSPORT", transport));
        }
        return m;
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "shm"})
    void shouldNameTheRankKilledMidCollectiveOnEverySurvivor(String transport) throws Exception {
        // a 5 minute deadline: survivors must learn of the death from the connection, not the clock
        try (ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("kill", "2", "300000"), env(transport))) {
            assertEquals(137, job.await(2, 60), job.dump());
            for (int r : new int[] {0, 1, 3}) {
                assertEquals(0, job.await(r, 60), job.dump());
                String result = job.line(r, "RESULT", 1);
                assertNotNull(result, job.dump());
                assertTrue(result.startsWith("RESULT PeerAbortedException origin=2 "), result);
                assertTrue(result.contains("rank 2") && result.contains("died"), result);
            }
            // survivors removed their own segments on close, and the dead rank's when they saw it die
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
            assertTrue(r2.startsWith("RESULT PeerAbortedException origin=0 ") && r2.contains("waiting for rank 1"),
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
            assertTrue(out.contains("did not connect") || out.contains("timed out"), out);
        }
    }
}
