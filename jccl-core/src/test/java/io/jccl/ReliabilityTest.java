package io.jccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Regression tests of the defects found in fault trials (issue 10): each failed before its fix. Deadlines here
 * are long (60 s) and the assertions demand far less, so a pass means "learned of it at once", not "waited it out".
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ReliabilityTest {
    private static final Duration LONG = Duration.ofSeconds(60);

    // ------------------------------------------------------------------ 1. byte order of buffer tensors

    static java.util.stream.Stream<Object[]> buffers() {
        return java.util.stream.Stream.of(
                new Object[] {true, ByteOrder.BIG_ENDIAN}, new Object[] {true, ByteOrder.LITTLE_ENDIAN},
                new Object[] {false, ByteOrder.BIG_ENDIAN}, new Object[] {false, ByteOrder.LITTLE_ENDIAN});
    }

    @ParameterizedTest(name = "direct={0} {1}")
    @MethodSource("buffers")
    void shouldReadAndWriteABufferInItsOwnByteOrder(boolean direct, ByteOrder order) {
        int n = 1000;
        List<float[]> out = Jccl.runThreads(4, comm -> {
            ByteBuffer b = (direct ? ByteBuffer.allocateDirect(4 * n) : ByteBuffer.allocate(4 * n)).order(order);
            for (int i = 0; i < n; i++) {
                b.putFloat(4 * i, 1f + i);
            }
            comm.allReduce(Tensor.of(b, DataType.FLOAT32), ReduceOp.SUM);
            ByteBuffer d = ByteBuffer.allocateDirect(16).order(order);
            d.putDouble(0, 0.5).putDouble(8, -2.25);
            comm.allReduce(Tensor.of(d, DataType.FLOAT64), ReduceOp.SUM);
            float[] r = new float[n + 2];
            for (int i = 0; i < n; i++) {
                r[i] = b.getFloat(4 * i);
            }
            r[n] = (float) d.getDouble(0);
            r[n + 1] = (float) d.getDouble(8);
            return r;
        });
        for (float[] r : out) {
            for (int i = 0; i < n; i++) {
                assertEquals(4f * (1f + i), r[i], "element " + i);
            }
            assertEquals(2f, r[n]);
            assertEquals(-9f, r[n + 1]);
        }
    }

    // ------------------------------------------------------------------ 2. a thread rank that closes or returns

    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"RING", "SHARED_MEMORY"})
    void shouldTellThreadRanksAtOnceThatARankClosed(Algorithm algorithm) {
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(LONG).withAlgorithm(algorithm);
        long start = System.nanoTime();
        JcclException e = assertThrows(JcclException.class, () -> Jccl.runThreads(4, config, comm -> {
            if (comm.rank() == 3) {
                comm.close();
                return null;
            }
            comm.allReduce(new float[4096], ReduceOp.SUM);
            return null;
        }));
        assertTrue(System.nanoTime() - start < 10_000_000_000L, "took " + (System.nanoTime() - start) / 1e6 + " ms");
        assertEveryRankNamed(e, 3, 3);
    }

    @Test
    void shouldTellThreadRanksAtOnceThatARankReturned() {
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(LONG);
        JcclException e = assertThrows(JcclException.class, () -> Jccl.runThreads(4, config, comm -> {
            if (comm.rank() == 1) {
                return null; // returns without the collective the others make
            }
            comm.allReduce(new float[16], ReduceOp.SUM);
            return null;
        }));
        assertEveryRankNamed(e, 1, 3);
    }

    /** The first failure and every suppressed one name {@code culprit}'s departure; {@code failures} ranks failed. */
    private static void assertEveryRankNamed(JcclException e, int culprit, int failures) {
        java.util.List<Throwable> all = new java.util.ArrayList<>();
        all.add(e.getCause());
        all.addAll(java.util.Arrays.asList(e.getSuppressed()));
        assertEquals(failures, all.size(), () -> e.toString());
        for (Throwable t : all) {
            assertTrue(t.getMessage().contains("rank " + culprit + " closed its communicator"), t.getMessage());
        }
    }

    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void shouldTellRanksOfEveryTransportThatARankClosed(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(kind, 3, LONG, Algorithm.RING, comm -> {
            if (comm.rank() == 2) {
                comm.close();
                return null;
            }
            comm.allReduce(new float[4096], ReduceOp.SUM);
            return null;
        });
        for (int r = 0; r < 2; r++) {
            Throwable t = out.get(r).error;
            assertNotNull(t, "rank " + r + " completed an allreduce without rank 2");
            assertTrue(t.getMessage().contains("rank 2 closed its communicator"), t.getMessage());
        }
    }

    // ------------------------------------------------------------------ 3. recv reports recv

    @Test
    void shouldReportARecvTimeoutAsRecv() throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(TransportKind.LOCAL, 2, LONG, comm -> {
            if (comm.rank() == 0) {
                comm.recv(Tensor.of(new float[3]), 1, 7, CollectiveOptions.DEFAULT.withTimeout(Duration.ofMillis(200)));
            }
            return null;
        });
        CollectiveTimeoutException e = assertInstanceOf(CollectiveTimeoutException.class, out.get(0).error);
        assertEquals(OpType.RECV, e.operation());
        assertTrue(e.getMessage().startsWith("rank 0: recv #0 timed out"), e.getMessage());
    }

    @Test
    void shouldReportATagMismatchAsRecv() throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(TransportKind.LOCAL, 2, LONG, comm -> {
            if (comm.rank() == 0) {
                comm.recv(Tensor.of(new float[3]), 1, 7, CollectiveOptions.DEFAULT);
            } else {
                comm.send(Tensor.of(new float[3]), 0, 8);
            }
            return null;
        });
        CollectiveMismatchException e = assertInstanceOf(CollectiveMismatchException.class, out.get(0).error);
        assertTrue(e.getMessage().startsWith("rank 0: recv #0") && e.getMessage().contains("tag"), e.getMessage());
        assertNull(out.get(1).error);
    }

    // ------------------------------------------------------------------ 5. teardown of a correct program

    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM"})
    void shouldNeverFailACorrectProgramThatClosesAsSoonAsItIsDone(TransportKind kind) throws Exception {
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(LONG)
                .withAlgorithm(Algorithm.SHARED_MEMORY);
        int cycles = kind == TransportKind.LOCAL ? 400 : 150;
        for (int cycle = 0; cycle < cycles; cycle++) {
            List<Communicator> comms = kind.create(4, config);
            List<CompletableFuture<Void>> ranks = new java.util.ArrayList<>();
            int c = cycle;
            for (Communicator comm : comms) {
                ranks.add(CompletableFuture.runAsync(() -> {
                    try {
                        // above the small-message size: two rounds, so a fast rank can leave between them
                        comm.allReduce(new float[c % 2 == 0 ? 4096 : 8], ReduceOp.SUM);
                        comm.allGather(Tensor.of(new float[64]), Tensor.of(new float[256]));
                    } finally {
                        comm.close();
                    }
                }, TransportKind.THREADS));
            }
            for (int r = 0; r < ranks.size(); r++) {
                try {
                    ranks.get(r).get(60, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    throw new AssertionError("cycle " + cycle + ", rank " + r + ": " + e.getCause(), e.getCause());
                }
            }
        }
    }

    // ------------------------------------------------------------------ 6, 7. close() and abort() during a call

    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> kindsAndAlgorithms() {
        return RankHarness.kindsAndAlgorithms();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("kindsAndAlgorithms")
    void shouldEndTheCallInFlightAtOnceOnClose(TransportKind kind, Algorithm algorithm) throws Exception {
        endTheCallInFlight(kind, algorithm, true);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("kindsAndAlgorithms")
    void shouldEndTheCallInFlightAtOnceOnAbort(TransportKind kind, Algorithm algorithm) throws Exception {
        endTheCallInFlight(kind, algorithm, false);
    }

    /**
     * Rank 0 waits in a collective that ranks 1 and 2 never join; another thread of rank 0 closes (or aborts) its
     * communicator. The call ends with an error that says why, long before its 60 s deadline (milliseconds, in
     * practice: the bound is against a hang, on a loaded machine), and the JVM lives (it used to die of a SIGSEGV
     * over shared memory when close unmapped the segments under the waiting thread).
     */
    private static void endTheCallInFlight(TransportKind kind, Algorithm algorithm, boolean close) throws Exception {
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(LONG).withAlgorithm(algorithm);
        java.util.Set<Thread> threadsBefore = jcclThreads();
        java.util.Set<String> segmentsBefore = segments();
        // three ranks: rank 0, waiting for rank 1, also looks at rank 2's published signature (where it crashed)
        List<Communicator> comms = kind.create(3, config);
        try {
            Communicator comm = comms.get(0);
            CompletableFuture<Throwable> call = CompletableFuture.supplyAsync(() -> {
                try {
                    comm.allReduce(new float[1 << 14], ReduceOp.SUM);
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            }, TransportKind.THREADS);
            // in flight: the flight recorder shows the call started (it then waits for ranks 1 and 2, who never come)
            String started = "\"collective_seq_id\":0,\"profiling_name\":\"jccl:allReduce\",\"is_p2p\":false,"
                    + "\"state\":\"started\"";
            long inFlightBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!comm.flightRecorderJson().contains(started) && !call.isDone() && System.nanoTime() < inFlightBy) {
                Thread.sleep(5);
            }
            assertTrue(comm.flightRecorderJson().contains(started) && !call.isDone(),
                    () -> "the call is not in flight: " + comm.flightRecorderJson());
            long start = System.nanoTime();
            if (close) {
                comm.close();
            } else {
                comm.abort("the test gave up");
            }
            // a bound against a hang, not a speed: half the call's 60 s deadline, so that a call ended here was
            // ended by the close (or abort), not timed out; the exception below says which
            Throwable t = call.get(LONG.toSeconds() / 2, TimeUnit.SECONDS);
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms < LONG.toMillis() / 2, "the call took " + ms + " ms to end (its deadline: " + LONG.toMillis()
                    + " ms)");
            CommunicatorAbortedException e = assertInstanceOf(CommunicatorAbortedException.class, t);
            assertTrue(e.getMessage().startsWith("rank 0: allReduce #0 ended: ") && e.getMessage().contains(
                    close ? "closed its communicator" : "the test gave up"), e.getMessage());
            // and the communicator refuses what comes next, without crashing
            assertThrows(CommunicatorAbortedException.class, () -> comm.allReduce(new float[4], ReduceOp.SUM));
        } finally {
            TransportKind.closeAll(comms);
        }
        // nothing leaked: no thread of these ranks, no segment
        long until = System.nanoTime() + 5_000_000_000L;
        java.util.Set<Thread> left = jcclThreads();
        while (!threadsBefore.containsAll(left) && System.nanoTime() < until) {
            Thread.sleep(20);
            left = jcclThreads();
        }
        left.removeAll(threadsBefore);
        assertTrue(left.isEmpty(), "threads left: " + left);
        java.util.Set<String> segmentsLeft = segments();
        segmentsLeft.removeAll(segmentsBefore);
        assertTrue(segmentsLeft.isEmpty(), "segments left: " + segmentsLeft);
    }

    /** Live threads that jccl started (not the test's own rank threads). */
    private static java.util.Set<Thread> jcclThreads() {
        java.util.Set<Thread> out = new java.util.HashSet<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith("jccl-") && !t.getName().startsWith("jccl-test")) {
                out.add(t);
            }
        }
        return out;
    }

    /** The segment files of this JVM in the shared-memory directory (other jobs on the machine may have theirs). */
    private static java.util.Set<String> segments() throws java.io.IOException {
        java.util.Set<String> out = new java.util.HashSet<>();
        java.nio.file.Path dir = io.jccl.transport.shm.ShmTransport.defaultDirectory();
        long me = ProcessHandle.current().pid();
        try (java.nio.file.DirectoryStream<java.nio.file.Path> files =
                     java.nio.file.Files.newDirectoryStream(dir, "jccl-*.shm")) {
            for (java.nio.file.Path f : files) {
                try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f)) {
                    ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());
                    if (ch.read(b, io.jccl.transport.shm.ShmSegmentDescriptor.OWNER_PID_OFFSET) == 8
                            && b.getLong(0) == me) {
                        out.add(f.toString());
                    }
                } catch (java.io.IOException gone) {
                    // removed meanwhile
                }
            }
        }
        return out;
    }
}
