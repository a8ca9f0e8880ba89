package io.jccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The JSONL bandwidth trace: one record per rank per operation, with the bytes the counters saw. */
class TraceTest {

    private static long field(String line, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":(-?\\d+)").matcher(line);
        assertTrue(m.find(), name + " in " + line);
        return Long.parseLong(m.group(1));
    }

    @Test
    void shouldWriteOneRecordPerRankPerOperation(@TempDir Path dir) throws Exception {
        String prefix = dir.resolve("trace").toString();
        List<long[]> sent = Jccl.runThreads(3, CommunicatorConfig.fromEnvironment().withTrace(prefix)
                .withAlgorithm(Algorithm.RING), comm -> {
            comm.allReduce(new float[300], ReduceOp.SUM);
            comm.broadcast(new float[10], 2);
            return new long[] {comm.counters().bytesSent(OpType.ALL_REDUCE),
                comm.counters().bytesSent(OpType.BROADCAST)};
        });
        for (int r = 0; r < 3; r++) {
            List<String> lines = Files.readAllLines(dir.resolve("trace.rank" + r + ".jsonl"));
            assertEquals(2, lines.size(), lines.toString());
            String ar = lines.get(0);
            assertTrue(ar.startsWith("{\"rank\":" + r + ",\"world\":3,\"comm\":0,\"op\":\"allReduce\",\"seq\":0,"
                    + "\"algorithm\":\"RING\",\"transport\":\"local\",\"dtype\":\"float32\",\"count\":300,"
                    + "\"reduceOp\":\"SUM\""), ar);
            assertEquals(sent.get(r)[0], field(ar, "bytesSent"));
            assertEquals(2 * 4 * 300 * 2 / 3, field(ar, "bytesReceived"));
            assertTrue(ar.contains("\"peersSent\":[" + (r + 2) % 3 + "]"), ar);
            assertTrue(field(ar, "durationNs") > 0 && field(ar, "startEpochUs") > 1_600_000_000_000_000L);
            assertTrue(ar.endsWith("\"status\":\"ok\"}"), ar);
            String bc = lines.get(1);
            assertTrue(bc.contains("\"op\":\"broadcast\",\"seq\":1") && bc.contains("\"root\":2"), bc);
            assertEquals(sent.get(r)[1], field(bc, "bytesSent"));
        }
    }

    /** A failed call's record carries the message as its status, escaped: the record stays one line of JSON. */
    @Test
    void shouldEscapeTheStatusOfAFailedCall(@TempDir Path dir) throws Exception {
        String prefix = dir.resolve("trace").toString();
        List<Communicator> comms = TransportKind.LOCAL.create(2, CommunicatorConfig.fromEnvironment()
                .withTrace(prefix).withAlgorithm(Algorithm.RING).withTimeout(java.time.Duration.ofSeconds(20)));
        try {
            CompletableFuture<Throwable> call = CompletableFuture.supplyAsync(() -> {
                try {
                    comms.get(0).allReduce(new float[8], ReduceOp.SUM);
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            });
            comms.get(1).abort("a \"quoted\" reason\non two lines");
            assertNotNull(call.get(20, TimeUnit.SECONDS));
        } finally {
            TransportKind.closeAll(comms);
        }
        List<String> lines = Files.readAllLines(dir.resolve("trace.rank0.jsonl"));
        assertEquals(1, lines.size(), lines.toString());
        String line = lines.get(0);
        assertTrue(line.startsWith("{\"rank\":0,\"world\":2,\"comm\":0,\"op\":\"allReduce\",\"seq\":0,"), line);
        assertTrue(line.contains("a \\\"quoted\\\" reason\\non two lines"), line);
        assertTrue(line.endsWith("\"}") && !line.contains("\"status\":\"ok\""), line);
    }

    /** Communicators of 2 ranks whose trace files are /dev/full: every write fails, as on a full disk. */
    private static List<Communicator> tracingToAFullDisk(Path dir) throws Exception {
        Path full = Path.of("/dev/full");
        if ("true".equalsIgnoreCase(System.getenv("CI"))) { // CI runs it, as the gloo and bed tests
            assertTrue(Files.isWritable(full), "CI=true but /dev/full (Linux) is not writable");
        }
        assumeTrue(Files.isWritable(full), "needs /dev/full");
        for (int r = 0; r < 2; r++) {
            Files.createSymbolicLink(dir.resolve("trace.rank" + r + ".jsonl"), full);
        }
        return TransportKind.LOCAL.create(2, CommunicatorConfig.fromEnvironment()
                .withTrace(dir.resolve("trace").toString()).withAlgorithm(Algorithm.RING)
                .withTimeout(java.time.Duration.ofSeconds(20)));
    }

    /**
     * A trace that cannot be written (a full disk) changes no call: each completes on every rank, and the
     * communicator goes on. A failed write escaped the call that had completed on this rank alone, and the
     * communicator stayed usable, out of step with its peers.
     */
    @Test
    void aTraceThatCannotBeWrittenFailsNoCall(@TempDir Path dir) throws Exception {
        List<Communicator> comms = tracingToAFullDisk(dir);
        try {
            List<CompletableFuture<float[]>> calls = new java.util.ArrayList<>();
            for (Communicator c : comms) {
                calls.add(CompletableFuture.supplyAsync(() -> {
                    float[] a = {c.rank() + 1, 1};
                    c.allReduce(a, ReduceOp.SUM);
                    c.allReduce(a, ReduceOp.SUM);
                    return a;
                }, TransportKind.THREADS)); // a thread each: the common pool may run one task at a time (JDK 25)
            }
            for (CompletableFuture<float[]> call : calls) {
                org.junit.jupiter.api.Assertions.assertArrayEquals(new float[] {6, 4}, call.get(20, TimeUnit.SECONDS));
            }
        } finally {
            TransportKind.closeAll(comms);
            removeLinks(dir);
        }
    }

    /**
     * A failed call whose trace cannot be written reports its own failure, and the communicator fails: the write's
     * failure replaced it, and the communicator stayed usable.
     */
    @Test
    void aFailedCallWhoseTraceCannotBeWrittenReportsItsOwnFailure(@TempDir Path dir) throws Exception {
        List<Communicator> comms = tracingToAFullDisk(dir);
        try {
            CompletableFuture<Throwable> call = CompletableFuture.supplyAsync(() -> {
                try {
                    comms.get(0).allReduce(new float[8], ReduceOp.SUM);
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            });
            comms.get(1).abort("stopped by the test");
            Throwable t = call.get(20, TimeUnit.SECONDS);
            assertTrue(t instanceof JcclException && t.getMessage().contains("stopped by the test"), String.valueOf(t));
            Throwable next = org.junit.jupiter.api.Assertions.assertThrows(CommunicatorAbortedException.class,
                    () -> comms.get(0).barrier());
            assertTrue(next.getMessage().contains("failed earlier"), next.getMessage());
        } finally {
            TransportKind.closeAll(comms);
            removeLinks(dir);
        }
    }

    /** Removes the links to /dev/full, which the temporary directory's clean-up warns about. */
    private static void removeLinks(Path dir) throws java.io.IOException {
        for (int r = 0; r < 2; r++) {
            Files.deleteIfExists(dir.resolve("trace.rank" + r + ".jsonl"));
        }
    }
}
