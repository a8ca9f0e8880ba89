package io.jccl.transport;

import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.TransportKind;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The {@link Transport} contract, at the SPI level, over every transport (ranks as threads of this JVM, three of
 * them): what the algorithms above rely on, whichever transport carries their frames.
 *
 * <p>A send may wait until the receiver takes the frame in (the shm transport's rings hold 64 KiB here), so a
 * frame larger than that is sent from a thread of its own, as a rank of its own would.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class TransportContractTest {
    private static final int WORLD = 3;
    private static final int COLLECTIVE = Streams.collective(0);
    private static final int P2P = Streams.pointToPoint(0);
    /** Another communicator's collective stream. */
    private static final int OTHER = Streams.collective(5);
    /** Elements of a large frame: more than a test ring of the shm transport holds (64 KiB), pooled on receipt. */
    private static final int LARGE = 20_000;

    private static long in(Duration d) {
        return System.nanoTime() + d.toNanos();
    }

    private static long soon() {
        return in(Duration.ofSeconds(20));
    }

    private static FrameHeader data(int source, int stream, int step, int count) {
        return new FrameHeader(FrameDescriptor.TYPE_DATA, OpType.ALL_REDUCE.id(), DataType.FLOAT32.id(), 0xFF, 0xFF,
                source, -1, 1, count, step, count, stream);
    }

    private static FrameHeader abort(int source, int stream, int step) {
        return new FrameHeader(FrameDescriptor.TYPE_ABORT, OpType.ALL_REDUCE.id(), DataType.UINT8.id(), 0xFF, 0xFF,
                source, -1, 1, 0, step, 0, stream);
    }

    /** {@code count} floats that name the sender, the stream and the step. */
    private static float[] payload(int source, int stream, int step, int count) {
        float[] a = new float[count];
        for (int i = 0; i < count; i++) {
            a[i] = source * 1_000_000f + stream * 10_000f + step * 100f + i % 100;
        }
        return a;
    }

    /** Sends the frame of {@code step} from three elements into the sender's array (which it may reuse at once). */
    private static void send(Transport t, int dst, int stream, int step, int count) {
        float[] a = new float[count + 3];
        System.arraycopy(payload(t.rank(), stream, step, count), 0, a, 3, count);
        t.send(dst, data(t.rank(), stream, step, count), new io.jccl.buffer.Buf(DataType.FLOAT32, a, 3, count));
        java.util.Arrays.fill(a, -1f);
    }

    /** Receives the frame of {@code step} from {@code src} on {@code stream} and checks its header and payload. */
    private static Frame expect(Transport t, int src, int stream, int step, int count) throws InterruptedException {
        Frame f = t.receive(src, stream, soon());
        assertNotNull(f, "rank " + t.rank() + ": nothing from rank " + src + " on stream " + stream);
        assertFalse(f.header().isAbort(), () -> "an abort: " + reason(f));
        assertEquals(src, f.header().source());
        assertEquals(stream, f.header().stream());
        assertEquals(step, f.header().step(), "frames out of order");
        assertEquals(count, f.header().payloadCount());
        float[] got = java.util.Arrays.copyOf((float[]) f.payload(), count);
        assertArrayEquals(payload(src, stream, step, count), got);
        return f;
    }

    private static String reason(Frame f) {
        return new String((byte[]) f.payload(), 0, f.header().payloadCount(), StandardCharsets.UTF_8);
    }

    private static void withTransports(TransportKind kind, Body body) throws Exception {
        List<Transport> t = kind.connect(WORLD);
        try {
            body.run(t);
        } finally {
            TransportKind.closeTransports(t);
        }
    }

    @FunctionalInterface
    private interface Body {
        void run(List<Transport> t) throws Exception;
    }

    private interface Task {
        void run() throws Exception;
    }

    /** Runs {@code task} on a thread of its own (another rank, or another thread of this rank). */
    private static CompletableFuture<Void> async(Task task) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread th = new Thread(() -> {
            try {
                task.run();
                done.complete(null);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        }, "jccl-test-contract");
        th.setDaemon(true);
        th.start();
        return done;
    }

    // ------------------------------------------------------------------ ordering and independence

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void framesFromOneSourceOnOneStreamArriveInOrder(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            int frames = 40;
            List<CompletableFuture<Void>> senders = new ArrayList<>();
            for (int src = 1; src < WORLD; src++) {
                Transport s = t.get(src);
                senders.add(async(() -> {
                    for (int i = 0; i < frames; i++) { // both streams interleaved; empty, small and large frames
                        send(s, 0, COLLECTIVE, i, count(i));
                        send(s, 0, P2P, i, count(i + 1));
                    }
                }));
            }
            for (int src = 1; src < WORLD; src++) {
                for (int i = 0; i < frames; i++) {
                    t.get(0).release(expect(t.get(0), src, COLLECTIVE, i, count(i)));
                }
                for (int i = 0; i < frames; i++) {
                    t.get(0).release(expect(t.get(0), src, P2P, i, count(i + 1)));
                }
            }
            for (CompletableFuture<Void> f : senders) {
                f.get(20, TimeUnit.SECONDS);
            }
        });
    }

    private static int count(int i) {
        return i % 7 == 0 ? LARGE : i % 3 == 0 ? 0 : 1 + i;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void framesOfDifferentStreamsDoNotBlockEachOther(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            int queued = 24; // about 2 MB unread on the collective stream: more than any ring or socket buffer
            CompletableFuture<Void> sender = async(() -> {
                for (int i = 0; i < queued; i++) {
                    send(t.get(1), 0, COLLECTIVE, i, LARGE);
                }
                send(t.get(1), 0, P2P, 0, 5);
                send(t.get(1), 0, OTHER, 0, 6);
            });
            expect(t.get(0), 1, OTHER, 0, 6);
            expect(t.get(0), 1, P2P, 0, 5);
            for (int i = 0; i < queued; i++) {
                expect(t.get(0), 1, COLLECTIVE, i, LARGE);
            }
            sender.get(20, TimeUnit.SECONDS);
        });
    }

    // ------------------------------------------------------------------ peek, deadline

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void peekHeaderDoesNotConsume(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            Transport r0 = t.get(0);
            assertNull(r0.peekHeader(1, COLLECTIVE));
            send(t.get(1), 0, COLLECTIVE, 7, 4);
            send(t.get(1), 0, COLLECTIVE, 8, 4);
            FrameHeader h = null;
            long until = soon();
            while (h == null && System.nanoTime() - until < 0) { // peeking never waits: ask until it is there
                h = r0.peekHeader(1, COLLECTIVE);
                Thread.sleep(1);
            }
            assertNotNull(h, "the frame never showed");
            assertEquals(7, h.step());
            assertEquals(7, r0.peekHeader(1, COLLECTIVE).step(), "a second peek sees the same frame");
            assertNull(r0.peekHeader(1, P2P), "another stream's queue is empty");
            expect(r0, 1, COLLECTIVE, 7, 4);
            expect(r0, 1, COLLECTIVE, 8, 4);
            assertNull(r0.peekHeader(1, COLLECTIVE));
        });
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void receiveReturnsNullAtTheDeadline(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            long start = System.nanoTime();
            assertNull(t.get(0).receive(1, COLLECTIVE, in(Duration.ofMillis(200))));
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms >= 190 && ms < 5_000, "returned after " + ms + " ms");
            start = System.nanoTime();
            assertNull(t.get(0).receive(2, P2P, System.nanoTime() - 1), "a deadline passed already");
            assertTrue(System.nanoTime() - start < 1_000_000_000L);
        });
    }

    // ------------------------------------------------------------------ abort, interrupt

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void abortPeersReachesEveryListedPeer(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            String why = "rank 0 gave up: \u00e9chec";
            t.get(0).abortPeers(new int[] {0, 1, 2}, abort(0, COLLECTIVE, 9), why); // itself listed: skipped
            for (int r = 1; r < WORLD; r++) {
                Transport tr = t.get(r);
                int other = r == 1 ? 2 : 1; // from any peer: also a receive from a rank that did not abort
                for (int src : new int[] {0, other}) {
                    for (int stream : new int[] {COLLECTIVE, P2P}) {
                        Frame f = tr.receive(src, stream, soon());
                        assertNotNull(f, "rank " + r + " waited for rank " + src + " in vain");
                        assertTrue(f.header().isAbort());
                        assertFalse(f.isDeparture());
                        assertEquals(0, f.header().source());
                        assertEquals(9, f.header().step());
                        assertEquals(why, reason(f));
                        tr.release(f);
                    }
                }
                Frame pending = tr.pendingAbort(0, COLLECTIVE);
                assertNotNull(pending);
                assertEquals(why, reason(pending));
                assertNull(tr.receive(0, OTHER, in(Duration.ofMillis(50))), "another communicator goes on");
            }
        });
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void interruptEndsThisRanksOwnPendingReceivePromptly(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            Transport r0 = t.get(0);
            CompletableFuture<Frame> waiting = new CompletableFuture<>();
            async(() -> waiting.complete(r0.receive(1, COLLECTIVE, in(Duration.ofSeconds(30)))));
            Thread.sleep(300);
            assertFalse(waiting.isDone(), "nothing was sent");
            Frame abort = AbstractTransport.abortFrame(abort(0, COLLECTIVE, 0), "closed by another thread");
            long start = System.nanoTime();
            r0.interrupt(abort);
            // ended by the interrupt, not by the receive's 30 s deadline: a bound against a hang, not a speed
            Frame f = waiting.get(20, TimeUnit.SECONDS);
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms < 15_000, "the receive took " + ms + " ms to end (its deadline was 30 s)");
            assertTrue(f.header().isAbort());
            assertEquals("closed by another thread", reason(f));
            Frame next = r0.receive(2, P2P, in(Duration.ofSeconds(5)));
            assertNotNull(next, "later receives of the communicator return it too");
            assertEquals("closed by another thread", reason(next));
            assertNotNull(r0.pendingAbort(2, COLLECTIVE));
            assertNull(t.get(1).pendingAbort(0, COLLECTIVE), "the peers are not told");
        });
    }

    // ------------------------------------------------------------------ posted receives

    /** A receive posted for the frame of {@code step}, copied into (or reduced with SUM into) {@code dst}. */
    private static final class Posted extends PostedReceive {
        private final int step;

        Posted(int step, float[] dst, boolean reduce) {
            this(step, new io.jccl.buffer.Buf(DataType.FLOAT32, dst, 0, dst.length), reduce);
        }

        Posted(int step, io.jccl.buffer.Buf dst, boolean reduce) {
            super(dst, reduce ? io.jccl.ReduceOp.SUM : null);
            this.step = step;
        }

        @Override
        protected boolean accepts(FrameHeader h) {
            return h.step() == step && h.payloadCount() == destination().count();
        }
    }

    /** Waits for {@code p} as the step layer does: a frame not placed is copied or reduced by the caller. */
    private static Frame complete(Transport t, int src, int stream, Posted p) throws InterruptedException {
        Frame f = t.receive(src, stream, soon(), p);
        assertNotNull(f, "the posted receive ended");
        if (!f.isPlaced() && !f.header().isAbort()) {
            io.jccl.buffer.Buf dst = p.destination();
            io.jccl.buffer.Buf got = new io.jccl.buffer.Buf(DataType.FLOAT32, f.payload(), 0, dst.count());
            if (p.op() == null) {
                got.copyTo(dst, 0);
            } else {
                io.jccl.reduce.Reductions.reduce(p.op(), dst, got);
            }
            t.release(f);
        }
        return f;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void postedReceivesTakeTheirFramesInOrderIntoTheirDestinations(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            Transport r0 = t.get(0);
            Transport r1 = t.get(1);
            int big = 3 * (1 << 18) + 5; // more than two of the TCP reader's 1 MiB chunks
            int[] counts = {7, 0, LARGE, big, 3};
            send(r1, 0, COLLECTIVE, 0, counts[0]); // sent before its receive is posted: queued, then handed over
            waitForFrame(r0, 1, COLLECTIVE);
            Posted[] posted = new Posted[counts.length];
            float[][] dst = new float[counts.length][];
            for (int i = 0; i < counts.length; i++) {
                dst[i] = new float[counts[i]];
                java.util.Arrays.fill(dst[i], 0.5f);
                posted[i] = new Posted(i, dst[i], i == 3);
                r0.post(1, COLLECTIVE, posted[i]);
            }
            CompletableFuture<Void> sender = sendSteps(r1, 1, counts);
            for (int i = 0; i < counts.length; i++) {
                Frame f = complete(r0, 1, COLLECTIVE, posted[i]);
                assertEquals(i, f.header().step());
                float[] want = expected(i, counts[i], i == 3);
                assertArrayEquals(want, dst[i], "frame " + i + (f.isPlaced() ? " (placed)" : " (whole)"));
                if (kind == TransportKind.TCP) {
                    assertEquals(i > 0, f.isPlaced(), "over TCP a frame whose receive was posted first is placed");
                }
            }
            sender.get(20, TimeUnit.SECONDS);
        });
    }

    /** Rank 1 sends rank 0 a frame of {@code counts[i]} elements at step i, for every i from {@code first}. */
    private static CompletableFuture<Void> sendSteps(Transport r1, int first, int[] counts) {
        return async(() -> {
            for (int i = first; i < counts.length; i++) {
                send(r1, 0, COLLECTIVE, i, counts[i]);
            }
        });
    }

    /** What rank 1's frame at {@code step} leaves in a receive: its elements, plus 0.5 where it reduced into 0.5s. */
    private static float[] expected(int step, int count, boolean reducedIntoHalves) {
        float[] want = payload(1, COLLECTIVE, step, count);
        if (reducedIntoHalves) {
            for (int k = 0; k < want.length; k++) {
                want[k] += 0.5f;
            }
        }
        return want;
    }

    /** Waits until a frame from {@code src} is queued at {@code t}, without taking it. */
    private static void waitForFrame(Transport t, int src, int stream) throws InterruptedException {
        long end = soon();
        while (t.peekHeader(src, stream) == null) {
            assertTrue(System.nanoTime() < end, "no frame arrived");
            Thread.sleep(1);
        }
    }

    /**
     * Receives posted into direct memory: over TCP a copy into little-endian memory is read from the socket straight
     * into it ({@link PostedReceive#fillable}), a reduction or big-endian memory through the socket buffer; every one
     * ends with the sender's elements, in more than one of the reader's chunks and in one.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void postedReceivesIntoDirectMemoryTakeTheSendersElements(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            Transport r0 = t.get(0);
            Transport r1 = t.get(1);
            int big = 3 * (1 << 18) + 5;
            int[] counts = {big, 9, big, big};
            java.nio.ByteOrder[] orders = {java.nio.ByteOrder.LITTLE_ENDIAN, java.nio.ByteOrder.LITTLE_ENDIAN,
                java.nio.ByteOrder.LITTLE_ENDIAN, java.nio.ByteOrder.BIG_ENDIAN};
            boolean[] reduce = {false, false, true, false};
            Posted[] posted = new Posted[counts.length];
            for (int i = 0; i < counts.length; i++) {
                java.nio.ByteBuffer mem = java.nio.ByteBuffer.allocateDirect(4 * counts[i]).order(orders[i]);
                io.jccl.buffer.Buf dst = io.jccl.buffer.Buf.over(DataType.FLOAT32, mem, 0, counts[i]);
                for (int k = 0; k < counts[i]; k++) {
                    mem.putFloat(4 * k, 0.5f);
                }
                posted[i] = new Posted(i, dst, reduce[i]);
                assertEquals(!reduce[i] && i != 3, posted[i].fillable());
                r0.post(1, COLLECTIVE, posted[i]);
            }
            CompletableFuture<Void> sender = sendSteps(r1, 0, counts);
            for (int i = 0; i < counts.length; i++) {
                Frame f = complete(r0, 1, COLLECTIVE, posted[i]);
                float[] want = expected(i, counts[i], reduce[i]);
                assertArrayEquals(want, (float[]) posted[i].destination().copyOf(0, counts[i]).array(),
                        "frame " + i + (f.isPlaced() ? " (placed)" : " (whole)"));
                if (kind == TransportKind.TCP) {
                    assertTrue(f.isPlaced(), "over TCP a frame whose receive was posted first is placed");
                }
            }
            sender.get(20, TimeUnit.SECONDS);
        });
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void aCancelledReceiveWritesNothingAndItsFrameGoesToTheNextReceive(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            Transport r0 = t.get(0);
            float[] dst = new float[LARGE];
            Posted p = new Posted(0, dst, false);
            r0.post(2, COLLECTIVE, p);
            assertNull(r0.receive(2, COLLECTIVE, in(Duration.ofMillis(50)), p), "nothing was sent yet");
            p.cancel();
            CompletableFuture<Void> sender = async(() -> send(t.get(2), 0, COLLECTIVE, 0, LARGE));
            Frame f = expect(r0, 2, COLLECTIVE, 0, LARGE);
            assertFalse(f.isPlaced());
            assertArrayEquals(new float[LARGE], dst, "the cancelled receive's destination is untouched");
            assertNull(p.result());
            sender.get(20, TimeUnit.SECONDS);
        });
    }

    /**
     * A receive into direct memory cancelled while its frame is arriving (over TCP the reader is then filling it
     * from the socket): no byte lands after {@code cancel} returns, the rest of the frame is drained, and the next
     * frame goes whole to the next receive.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void aReceiveIntoDirectMemoryCancelledMidFrameWritesNothingAfterTheCancel(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            Transport r0 = t.get(0);
            int count = 16 << 20; // 64 MiB: long enough on the wire to be cancelled in the middle
            java.nio.ByteBuffer mem = java.nio.ByteBuffer.allocateDirect(4 * count).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            Posted p = new Posted(0, io.jccl.buffer.Buf.over(DataType.FLOAT32, mem, 0, count), false);
            r0.post(1, COLLECTIVE, p);
            CompletableFuture<Void> sender = async(() -> {
                send(t.get(1), 0, COLLECTIVE, 0, count);
                send(t.get(1), 0, COLLECTIVE, 1, 5);
            });
            // over TCP until the reader is filling the destination; the in-process transports hand a frame over
            // whole when a receive waits for it, so there the cancel comes before the frame is taken
            long end = in(Duration.ofSeconds(kind == TransportKind.TCP ? 20 : 0));
            while (mem.getFloat(4 * 4096) == 0 && p.result() == null && System.nanoTime() < end) {
                Thread.onSpinWait(); // payload() has no zero at element 4096
            }
            if (kind == TransportKind.TCP) {
                assertTrue(mem.getFloat(4 * 4096) != 0 || p.result() != null, "the reader never filled the receive");
            }
            p.cancel();
            java.nio.ByteBuffer seen = java.nio.ByteBuffer.allocate(4 * count);
            seen.put(mem.duplicate().clear());
            Frame next = r0.receive(1, COLLECTIVE, soon());
            assertNotNull(next);
            if (next.header().step() == 0) { // cancelled before it was taken: the frame went to the next receive
                assertFalse(kind == TransportKind.TCP && mem.getFloat(4 * 4096) != 0, "a frame both placed and handed over");
                r0.release(next);
            }
            if (next.header().step() == 0) {
                expect(r0, 1, COLLECTIVE, 1, 5);
            } else {
                assertEquals(1, next.header().step());
                assertArrayEquals(payload(1, COLLECTIVE, 1, 5), java.util.Arrays.copyOf((float[]) next.payload(), 5));
            }
            sender.get(20, TimeUnit.SECONDS);
            assertEquals(seen.flip(), mem.duplicate().clear(), "bytes landed after the cancel returned");
        });
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void aFrameThePostedReceiveDoesNotAcceptIsHandedOverWholeAndNotPlaced(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            Transport r0 = t.get(0);
            float[] dst = new float[10];
            Posted p = new Posted(4, dst, false); // expects step 4, 10 elements
            r0.post(1, COLLECTIVE, p);
            send(t.get(1), 0, COLLECTIVE, 5, 10);
            Frame f = r0.receive(1, COLLECTIVE, soon(), p);
            assertNotNull(f);
            assertFalse(f.isPlaced(), "a header the receive does not accept never writes into its destination");
            assertEquals(5, f.header().step());
            assertArrayEquals(payload(1, COLLECTIVE, 5, 10), java.util.Arrays.copyOf((float[]) f.payload(), 10));
            assertArrayEquals(new float[10], dst);
        });
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void aPostedReceiveEndsWithAnAbortPromptly(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            Transport r0 = t.get(0);
            Posted p = new Posted(0, new float[4], false);
            r0.post(1, COLLECTIVE, p);
            CompletableFuture<Frame> waiting = new CompletableFuture<>();
            async(() -> waiting.complete(r0.receive(1, COLLECTIVE, in(Duration.ofSeconds(30)), p)));
            Thread.sleep(200);
            long start = System.nanoTime();
            t.get(2).abortPeers(new int[] {0}, abort(2, COLLECTIVE, 0), "rank 2 failed");
            // ended by the abort, not by the receive's 30 s deadline: a bound against a hang, not a speed
            Frame f = waiting.get(20, TimeUnit.SECONDS);
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms < 15_000, "the posted receive took " + ms + " ms to see the abort (its deadline was 30 s)");
            assertTrue(f.header().isAbort());
            assertEquals("rank 2 failed", reason(f));
        });
    }

    // ------------------------------------------------------------------ close

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void closeIsSeenAsADepartureAfterTheFramesSentBeforeIt(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            for (int i = 0; i < 3; i++) {
                send(t.get(1), 0, COLLECTIVE, i, 1 + 100 * i);
            }
            send(t.get(1), 2, P2P, 0, 1);
            t.get(1).close();
            for (int i = 0; i < 3; i++) {
                expect(t.get(0), 1, COLLECTIVE, i, 1 + 100 * i);
            }
            for (int k = 0; k < 2; k++) { // and again: a departure is not consumed
                Frame f = t.get(0).receive(1, COLLECTIVE, soon());
                assertNotNull(f);
                assertTrue(f.isDeparture() && f.header().isAbort(), f.header().toString());
                assertEquals(1, f.header().source());
            }
            expect(t.get(2), 1, P2P, 0, 1);
            Frame f = t.get(2).receive(1, P2P, soon());
            assertNotNull(f);
            assertTrue(f.isDeparture());
            assertTrue(t.get(2).receive(1, COLLECTIVE, soon()).isDeparture(), "on every stream");
            assertNull(t.get(2).receive(0, COLLECTIVE, in(Duration.ofMillis(50))), "the others are still there");
        });
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void sendAfterCloseFailsWithAnException(TransportKind kind) throws Exception {
        // see assertFailsAsClosed
        withTransports(kind, t -> {
            t.get(0).close();
            t.get(0).close(); // twice is harmless
            assertTimeoutPreemptively(Duration.ofSeconds(10), () -> {
                assertFailsAsClosed(kind, 1, () -> send(t.get(0), 1, COLLECTIVE, 0, 4));
                assertFailsAsClosed(kind, 2, () -> send(t.get(0), 2, P2P, 0, LARGE));
            });
        });
    }

    /**
     * A receive, posted or not, on a closed transport fails saying so (see assertFailsAsClosed). The TCP and local
     * transports' waited until their deadline for a frame nobody would bring, and the caller then blamed the peer for
     * not sending.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void receiveAfterCloseFailsWithAnException(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            t.get(0).close();
            assertTimeoutPreemptively(Duration.ofSeconds(10), () -> { // the receives' deadlines are 20 s away
                assertFailsAsClosed(kind, 1, () -> t.get(0).receive(1, COLLECTIVE, soon()));
                Posted p = new Posted(0, new float[4], false);
                assertFailsAsClosed(kind, 2, () -> {
                    t.get(0).post(2, P2P, p);
                    t.get(0).receive(2, P2P, soon(), p);
                });
            });
        });
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(TransportKind.class)
    void releasedFramesLeaveLaterFramesIntact(TransportKind kind) throws Exception {
        withTransports(kind, t -> {
            int rounds = 6;
            CompletableFuture<Void> sender = async(() -> {
                for (int round = 0; round < rounds; round++) {
                    send(t.get(1), 0, COLLECTIVE, round, released(round));
                }
            });
            for (int round = 0; round < rounds; round++) { // pooled arrays come back unzeroed: only the count is read
                t.get(0).release(expect(t.get(0), 1, COLLECTIVE, round, released(round)));
            }
            sender.get(20, TimeUnit.SECONDS);
            t.get(0).release(AbstractTransport.abortFrame(abort(0, COLLECTIVE, 0), "not pooled"));
            t.get(0).release(Frame.departed(1));
        });
    }

    /** Sizes of the frames released in turn: pooled ones of two capacities, and small ones. */
    private static int released(int round) {
        return round % 3 == 0 ? LARGE : round % 3 == 1 ? LARGE / 2 + 1 : 10;
    }

    /**
     * A send (or a receive, which names {@code dst} as its source) on a closed transport fails saying so, on every
     * transport: a JcclException "rank 0: the ... transport is closed". (The TCP transport's send reported the peer lost, "connection to rank {@code dst} lost while
     * sending ... the process died or was killed", blaming a live peer for this rank's own close.)
     */
    private static void assertFailsAsClosed(TransportKind kind, int dst,
                                            org.junit.jupiter.api.function.Executable send) {
        io.jccl.JcclException e = assertThrows(io.jccl.JcclException.class, send, kind + ", to rank " + dst);
        assertEquals(io.jccl.JcclException.class, e.getClass(), e.toString());
        assertTrue(e.getMessage().contains("rank 0: the ") && e.getMessage().endsWith(" transport is closed"),
                e.getMessage());
    }
}
