package io.jccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every rank's last calls, written where and when the flight recorder says. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FlightRecorderTest {

    private static CommunicatorConfig config(Path dir, int entries) {
        return JcclSettings.from(Map.of("JCCL_FLIGHT_RECORDER_DIR", dir.toString(), "JCCL_FLIGHT_RECORDER_ENTRIES",
                Integer.toString(entries)), Map.of("java.io.tmpdir", dir.toString())).communicatorConfig();
    }

    private static int count(String json, String needle) {
        Matcher m = Pattern.compile(Pattern.quote(needle)).matcher(json);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    @Test
    void recordsEveryCallWithTorchsFieldNames(@TempDir Path dir) {
        List<String> json = Jccl.runThreads(3, config(dir, 100), c -> {
            c.allReduce(new float[8]);
            c.broadcast(new int[3], 2);
            if (c.rank() == 0) {
                c.send(Tensor.of(new long[2]), 1, 5);
            } else if (c.rank() == 1) {
                c.recv(Tensor.of(new long[2]), 0, 5);
            }
            Communicator g = c.newGroup(0, 1);
            if (g != null) {
                try (g) {
                    g.barrier();
                }
            }
            return c.flightRecorderJson();
        });
        String r1 = json.get(1);
        assertTrue(r1.startsWith("{\"version\":\"jccl-fr-1\",\"rank\":1,\"world_size\":3"), r1);
        assertTrue(r1.contains("\"profiling_name\":\"jccl:allReduce\",\"is_p2p\":false,\"state\":\"completed\""), r1);
        assertTrue(r1.contains("\"collective_seq_id\":0") && r1.contains("\"input_dtypes\":[\"float32\"]")
                && r1.contains("\"input_sizes\":[[8]]"), r1);
        assertTrue(r1.contains("\"profiling_name\":\"jccl:broadcast\"") && r1.contains("\"root\":2"), r1);
        assertTrue(r1.contains("\"p2p_seq_id\":0,\"profiling_name\":\"jccl:recv\",\"is_p2p\":true"), r1);
        assertTrue(r1.contains("\"peer\":0"), r1);
        assertTrue(r1.contains("\"profiling_name\":\"jccl:barrier\""), "the sub-group's calls too: " + r1);
        assertTrue(r1.contains("\"duration_ms\":") && r1.contains("\"time_discovered_completed_ns\":"), r1);
        assertEquals(0, count(r1, "\"state\":\"started\""), r1);
    }

    /**
     * A call reads the clock, makes its entry and counts itself when it starts: when it first waits or sends, right
     * after it publishes an arrival in a shared arena, or once its algorithm ran (a call on one rank never waits).
     * Every call, waiting or not, must come out created, started and completed in that order, and counted.
     */
    @Test
    void everyCallIsTimedAndCountedWhetherItWaitedOrNot(@TempDir Path dir) {
        for (int world : new int[] {1, 2}) {
            List<String> json = Jccl.runThreads(world, config(dir, 100), c -> {
                for (int i = 0; i < 3; i++) {
                    c.allReduce(new float[] {i});
                    c.broadcast(new float[2], 0);
                }
                c.allReduce(Tensor.of(new float[4]), ReduceOp.SUM, CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.RING));
                assertEquals(4, c.counters().get(OpType.ALL_REDUCE, io.jccl.instrument.Counter.CALLS));
                assertEquals(3, c.counters().get(OpType.BROADCAST, io.jccl.instrument.Counter.CALLS));
                return c.flightRecorderJson();
            });
            for (String r : json) {
                assertEquals(7, count(r, "\"state\":\"completed\""), r);
                Matcher m = Pattern.compile("\"time_created_ns\":(\\d+),\"time_discovered_started_ns\":(\\d+),"
                        + "\"time_discovered_completed_ns\":(\\d+)").matcher(r);
                int entries = 0;
                long last = 0;
                while (m.find()) {
                    long created = Long.parseLong(m.group(1));
                    long started = Long.parseLong(m.group(2));
                    long completed = Long.parseLong(m.group(3));
                    assertTrue(last <= created && created <= started && started <= completed, r);
                    last = completed;
                    entries++;
                }
                assertEquals(7, entries, world + " ranks: " + r);
            }
        }
    }

    /**
     * A synchronous call waiting for its turn behind another thread's call (an asynchronous one that waits for a
     * late peer) is in the record as scheduled while it waits, though a call whose turn it is makes its entry only
     * when it starts.
     */
    @Test
    void aCallWaitingForItsTurnIsScheduled(@TempDir Path dir) {
        Pattern started = Pattern.compile("\"collective_seq_id\":0,\"profiling_name\":\"jccl:allReduce\","
                + "\"is_p2p\":false,\"state\":\"started\"");
        Pattern scheduled = Pattern.compile("\"collective_seq_id\":1,\"profiling_name\":\"jccl:allReduce\","
                + "\"is_p2p\":false,\"state\":\"scheduled\"");
        java.util.concurrent.CountDownLatch seen = new java.util.concurrent.CountDownLatch(1);
        List<String> json = Jccl.runThreads(2, config(dir, 100), c -> {
            if (c.rank() == 1) {
                // late until rank 0 has looked at its record (or given up looking)
                assertTrue(seen.await(60, TimeUnit.SECONDS), "rank 0 never looked");
                c.allReduce(new float[1]);
                c.allReduce(new float[1]);
                return "";
            }
            String r0;
            try {
                Work w = c.allReduceAsync(Tensor.of(new float[1]));
                Thread t = new Thread(() -> c.allReduce(new float[1]));
                t.start();
                // until the second call, waiting for its turn, is in the record (at most 30 s: then it never is)
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                r0 = c.flightRecorderJson();
                while (!(started.matcher(r0).find() && scheduled.matcher(r0).find()) && System.nanoTime() < until) {
                    Thread.sleep(10);
                    r0 = c.flightRecorderJson();
                }
                seen.countDown();
                w.await();
                t.join();
            } finally {
                seen.countDown();
            }
            return r0;
        });
        String r0 = json.get(0);
        assertTrue(started.matcher(r0).find(), r0);
        assertTrue(scheduled.matcher(r0).find(), r0);
    }

    @Test
    void keepsTheLastCallsOnly(@TempDir Path dir) {
        String json = Jccl.runThreads(2, config(dir, 5), c -> {
            for (int i = 0; i < 12; i++) {
                c.allReduce(new int[] {i});
            }
            return c.flightRecorderJson();
        }).get(0);
        // the newGroup-free run made 12 allreduces (and the allgathers of none): the last 5 stay, oldest first
        assertEquals(5, count(json, "\"record_id\":"), json);
        assertTrue(json.contains("\"collective_seq_id\":7") && json.contains("\"collective_seq_id\":11"), json);
        assertTrue(!json.contains("\"collective_seq_id\":6,"), json);
    }

    @Test
    void everyRankWritesItsRecordWhenACallTimesOut(@TempDir Path dir) throws Exception {
        assertThrows(JcclException.class, () -> Jccl.runThreads(3, config(dir, 100).withTimeout(
                Duration.ofMillis(500)), c -> {
            c.allReduce(new float[4]);
            if (c.rank() == 2) {
                Thread.sleep(2000); // never makes the second call in time
                return null;
            }
            c.allReduce(new float[4]);
            return null;
        }));
        for (int r = 0; r < 2; r++) {
            Path f = dir.resolve("jccl_fr_rank" + r + ".json");
            assertTrue(Files.exists(f), "rank " + r + " wrote " + f);
            String json = Files.readString(f);
            assertTrue(json.contains("\"state\":\"failed\"") && json.contains("rank 2 never entered allReduce #1"),
                    json);
            assertTrue(json.contains("\"collective_seq_id\":1"), json);
        }
    }

    @Test
    void aTouchedTriggerFileOrTheApiWritesTheRecord(@TempDir Path dir) throws Exception {
        Jccl.run(2, config(dir, 100), c -> {
            c.allReduce(new float[4]);
            if (c.rank() == 0) {
                Path f = c.dumpFlightRecorder();
                assertEquals(dir.resolve("jccl_fr_rank0.json"), f);
                Files.delete(f);
                Files.writeString(dir.resolve("dump"), "now");
            }
            c.barrier();
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            Path mine = dir.resolve("jccl_fr_rank" + c.rank() + ".json");
            while (!Files.exists(mine) && System.nanoTime() < until) {
                Thread.sleep(50);
            }
            assertTrue(Files.exists(mine), "the trigger made rank " + c.rank() + " write its record");
            assertTrue(Files.readString(mine).contains("changed"), Files.readString(mine));
            c.barrier();
        });
        Jccl.run(1, JcclSettings.defaults().communicatorConfig(),
                c -> assertThrows(IllegalStateException.class, c::dumpFlightRecorder));
    }

    /** Whether a thread named {@code name} is alive. */
    private static boolean alive(String name) {
        return Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals(name) && t.isAlive());
    }

    /**
     * The JVM's thread that watches the trigger files ran on after every communicator had closed. It now ends once
     * none is watched, and the next communicator with a directory starts it again.
     */
    @Test
    void theTriggerThreadEndsOnceNoCommunicatorIsOpenAndStartsAgain(@TempDir Path dir) throws Exception {
        String name = "jccl-flight-recorder-trigger";
        for (int round = 0; round < 2; round++) {
            Jccl.run(1, config(dir, 100), c -> {
                assertTrue(alive(name));
                Path mine = dir.resolve("jccl_fr_rank0.json");
                Files.deleteIfExists(mine);
                Files.writeString(dir.resolve("dump"), "now " + System.nanoTime());
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!Files.exists(mine) && System.nanoTime() < until) {
                    Thread.sleep(50);
                }
                assertTrue(Files.exists(mine), "the trigger made the rank write its record");
            });
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (alive(name) && System.nanoTime() < until) {
                System.gc(); // communicators of other tests that were dropped unclosed
                Thread.sleep(100);
            }
            assertTrue(!alive(name), "the trigger thread still runs after every communicator closed");
        }
    }

    /**
     * A record that cannot be moved into place (here a non-empty directory holds its name) is a warning, and the
     * temporary file written first does not stay behind: one was left in the directory on every such dump.
     */
    @Test
    void aRecordThatCannotBeWrittenLeavesNoTemporaryFile(@TempDir Path dir) throws Exception {
        Path blocker = dir.resolve("jccl_fr_rank0.json");
        Files.createDirectories(blocker);
        Files.writeString(blocker.resolve("keep"), "a directory where the record goes");
        Jccl.run(1, config(dir, 100), c -> {
            c.allReduce(new float[4]);
            assertEquals(null, c.dumpFlightRecorder(), "the record could not be written");
        });
        try (var files = Files.list(dir)) {
            List<String> left = files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".tmp")).toList();
            assertEquals(List.of(), left, "temporary files left in " + dir);
        }
    }
}
