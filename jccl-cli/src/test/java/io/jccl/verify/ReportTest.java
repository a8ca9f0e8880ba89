package io.jccl.verify;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The report names what the ranks ran on. {@code jccl verify --hosts 2} ran them as processes on the test bed's
 * hosts (shared memory within a host, TCP between) but left the settings' transport at its default, and printed
 * "queue mesh (ranks as threads)", "Per-rank byte counters over threads" and {@code "transport":"threads"}.
 * (MultiHostTest checks the command itself on a real bed, which needs root.)
 */
class ReportTest {

    private static String text(Report r) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        r.printText(new PrintStream(b, true, StandardCharsets.UTF_8));
        return b.toString(StandardCharsets.UTF_8);
    }

    private static JsonNode json(Report r) throws Exception {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        r.printJson(new PrintStream(b, true, StandardCharsets.UTF_8));
        return new ObjectMapper().readTree(b.toString(StandardCharsets.UTF_8));
    }

    @Test
    void onTheBedTheReportNamesTheHostsAndTheirTransports() throws Exception {
        Report r = new Report("java model", Report.Ranks.onBed(2, 2, null), List.of(), List.of());
        String text = text(r);
        assertTrue(text.startsWith("jccl verify: processes on 2 simulated hosts of the test bed (2 per host, links "
                + "unlimited; shm within a host, tcp between) against java model\n"), text);
        assertTrue(text.contains("Per-rank byte counters over the test bed (shm within a host, tcp between)"), text);
        assertFalse(text.contains("threads"), text);
        JsonNode j = json(r);
        assertEquals("shm+tcp", j.get("transport").asText());
        assertEquals(2, j.get("hosts").asInt());
        assertEquals(2, j.get("ranksPerHost").asInt());

        // one rank per host: the rendezvous connects them over plain TCP
        Report alone = new Report("java model", Report.Ranks.onBed(3, 1, "1gbit"), List.of(), List.of());
        assertTrue(text(alone).startsWith("jccl verify: processes on 3 simulated hosts of the test bed (1 per host, "
                + "links 1gbit;"), text(alone));
        assertEquals("tcp", json(alone).get("transport").asText());
    }

    @Test
    void offTheBedTheReportNamesTheTransport() throws Exception {
        for (String t : new String[] {"threads", "local"}) {
            Report r = new Report("java model", Report.Ranks.of(t), List.of(), List.of());
            assertTrue(text(r).startsWith("jccl verify: queue mesh (ranks as threads) against java model"), text(r));
            assertTrue(text(r).contains("Per-rank byte counters over threads"), text(r));
            assertEquals("threads", json(r).get("transport").asText());
            assertFalse(json(r).has("hosts"));
        }
        Report shm = new Report("java model", Report.Ranks.of("shm"), List.of(), List.of());
        assertTrue(text(shm).startsWith("jccl verify: shm (ranks as JVM processes) against java model"), text(shm));
        assertEquals("shm", json(shm).get("transport").asText());
    }
}
