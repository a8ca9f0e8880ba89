package io.jccl.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Real JVMs on two simulated hosts of the test bed (own network, host name, /dev/shm and /etc/hosts each; the
 * host names do not resolve, as in many containers), two ranks per host.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@SuppressWarnings("try") // the bed is held for the job's lifetime
class MultiHostTest {

    /**
     * It failed at start: with unresolvable host names every rank's identity was "unknown/boot id", jccl concluded
     * that all ranks shared memory, and every rank died on a missing segment of a rank on the other host.
     */
    @Test
    void shouldRunAcrossHostsWhoseNamesDoNotResolve() throws Exception {
        try (TestBed bed = TestBed.up(2);
             ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("ok", "-1", "60000"),
                     bed.env(2, Map.of()))) {
            for (int r = 0; r < 4; r++) {
                assertEquals(0, job.await(r, 120), job.dump());
                assertEquals("RESULT ok", job.line(r, "RESULT", 1), job.dump());
                // per pair: shared memory with the rank on the same host, TCP to the other host
                assertEquals("TRANSPORT shm+tcp", job.line(r, "TRANSPORT", 1), job.dump());
            }
        }
    }

    /**
     * A rank on host 1 killed with SIGKILL: every rank of every host names it, within 5 s (its neighbour on host 1
     * over shared memory, the ranks of host 0 over TCP).
     */
    @Test
    void shouldNameARankKilledOnAnotherHostEverywhere() throws Exception {
        try (TestBed bed = TestBed.up(2);
             ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("kill", "2", "300000"),
                     bed.env(2, Map.of()))) {
            assertEquals(137, job.await(2, 120), job.dump());
            long killedAt = Long.parseLong(job.line(2, "KILL", 1).substring(5));
            for (int r : new int[] {0, 1, 3}) {
                assertEquals(0, job.await(r, 60), job.dump());
                String result = job.line(r, "RESULT", 1);
                assertNotNull(result, job.dump());
                assertTrue(result.startsWith("RESULT PeerAbortedException origin=2 "), result);
                long detectMs = Long.parseLong(job.line(r, "DETECTED", 1).substring(9)) - killedAt;
                System.out.println("kill -9 across hosts: rank " + r + " (host " + r / 2 + ") named rank 2 after "
                        + detectMs + " ms");
                assertTrue(detectMs < 5000, "rank " + r + " took " + detectMs + " ms\n" + job.dump());
            }
        }
    }
}
