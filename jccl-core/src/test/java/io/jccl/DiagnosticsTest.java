package io.jccl;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The monitored barrier, the JFR events and the JCCL_DEBUG logs. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DiagnosticsTest {

    @Test
    void aMonitoredBarrierNamesEveryRankThatDidNotArrive() throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(5, Duration.ofSeconds(30), c -> {
            if (c.rank() == 2 || c.rank() == 4) {
                Thread.sleep(2500);
                return null;
            }
            c.monitoredBarrier(Duration.ofMillis(800));
            return null;
        });
        CollectiveTimeoutException t = assertInstanceOf(CollectiveTimeoutException.class, out.get(0).error);
        assertTrue(t.getMessage().contains("ranks 2, 4 never entered barrier #0 (a monitored barrier"), t.getMessage());
        assertEquals(2, t.peer());
        for (int r : new int[] {1, 3}) {
            PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, out.get(r).error);
            assertTrue(a.getMessage().contains("ranks 2, 4 never entered"), a.getMessage());
        }
        // when every rank comes it is a barrier
        Jccl.run(3, c -> {
            c.monitoredBarrier(Duration.ofSeconds(10));
            c.monitoredBarrier(Duration.ofSeconds(10));
        });
    }

    @Test
    void everyCallIsAJfrEventWhenARecordingAsks(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("calls.jfr");
        try (Recording r = new Recording()) {
            r.enable("io.jccl.Call");
            r.start();
            Jccl.run(2, c -> {
                c.allReduce(new float[256]);
                c.broadcast(new int[3], 1);
                if (c.rank() == 0) {
                    c.send(Tensor.of(new long[4]), 1, 0);
                } else {
                    c.recv(Tensor.of(new long[4]), 0, 0);
                }
            });
            r.stop();
            r.dump(file);
        }
        List<String> seen = new ArrayList<>();
        for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
            if (e.getEventType().getName().equals("io.jccl.Call")) {
                seen.add(e.getString("operation") + "/" + e.getInt("rank") + "/" + e.getLong("bytes") + "/"
                        + e.getString("algorithm"));
                assertTrue(e.getDuration().toNanos() >= 0);
            }
        }
        assertTrue(seen.stream().anyMatch(s -> s.startsWith("allReduce/0/1024/")), seen.toString());
        assertTrue(seen.stream().anyMatch(s -> s.startsWith("allReduce/1/1024/")), seen.toString());
        assertTrue(seen.contains("send/0/32/DIRECT") && seen.contains("recv/1/32/DIRECT"), seen.toString());
        assertTrue(seen.stream().anyMatch(s -> s.startsWith("broadcast/1/12/")), seen.toString());
    }

    @Test
    void jcclDebugInfoSaysWhereEachRankIsAndTraceEveryCall() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        CommunicatorConfig config = JcclSettings.from(Map.of("JCCL_DEBUG", "TRACE", "JCCL_DEBUG_SUBSYS",
                "INIT,COLL,NET,TUNE"), Map.of("java.io.tmpdir", System.getProperty("java.io.tmpdir"))).communicatorConfig();
        String url = "tcp://127.0.0.1:" + port;
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            List<CompletableFuture<Void>> ranks = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                int rank = r;
                ranks.add(CompletableFuture.runAsync(() -> {
                    try (Communicator c = Jccl.initProcessGroup(ProcessGroupOptions.of(url).withRank(rank)
                            .withWorldSize(2).withTransport("tcp").withConfig(config))) {
                        c.allReduce(new float[3]);
                    }
                }, t -> new Thread(t, "debug-rank-" + rank).start()));
            }
            for (CompletableFuture<Void> f : ranks) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            System.setErr(err);
        }
        String log = captured.toString(StandardCharsets.UTF_8);
        assertTrue(log.contains("jccl INFO INIT rank 1 of 2 (local rank 1)"), log);
        assertTrue(log.contains("transport tcp"), log);
        assertTrue(log.contains("jccl INFO NET rank 0: pairs (every one) talk over TCP"), log);
        assertTrue(log.contains("jccl INFO TUNE rank 1: AUTO's cost model is"), log);
        assertTrue(log.contains("jccl TRACE COLL rank 0: allReduce #0 of communicator 0: float32 x 3, SUM"), log);
        assertTrue(!log.contains("jccl INFO SHM"), "SHM is not among the subsystems asked for: " + log);
        assertNotNull(config);
    }
}
