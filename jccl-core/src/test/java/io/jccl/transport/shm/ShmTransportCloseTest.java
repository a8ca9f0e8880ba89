package io.jccl.transport.shm;

import io.jccl.DataType;
import io.jccl.JcclException;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import io.jccl.buffer.Buf;
import io.jccl.store.InMemoryStore;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.SharedArena;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Closing a transport while another thread of the same rank is inside a call: an exception, never a crash. */
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ShmTransportCloseTest {

    private static ShmTransport[] connect(Path dir, int world) {
        InMemoryStore store = new InMemoryStore();
        @SuppressWarnings({"unchecked", "rawtypes"})
        CompletableFuture<ShmTransport>[] f = new CompletableFuture[world];
        for (int r = 0; r < world; r++) {
            int rank = r;
            f[r] = new CompletableFuture<>();
            Thread t = new Thread(() -> {
                try {
                    f[rank].complete(ShmTransport.connect(rank, world, store, dir, 4096, 8192, 8192,
                            Duration.ofSeconds(20)));
                } catch (Throwable e) {
                    f[rank].completeExceptionally(e);
                }
            });
            t.setDaemon(true);
            t.start();
        }
        ShmTransport[] out = new ShmTransport[world];
        for (int r = 0; r < world; r++) {
            out[r] = f[r].join();
        }
        return out;
    }

    private static FrameHeader header(int source, int count) {
        return header(FrameDescriptor.TYPE_DATA, source, count);
    }

    private static FrameHeader header(byte type, int source, int count) {
        return header(type, source, count, 0);
    }

    private static FrameHeader header(byte type, int source, int count, int stream) {
        return new FrameHeader(type, 0, DataType.FLOAT32.id(), 0xFF, 0xFF, source, -1, 1, count, 0, count, stream);
    }

    /**
     * Starts a thread that sends rank 1 40 KB from {@code rank0}: more than its 4 KiB ring holds, so it waits for
     * room (holding the ring) while rank 1 reads nothing. What the send throws goes to {@code sending}.
     */
    private static Thread sendTooMuch(ShmTransport rank0, AtomicReference<Throwable> sending) {
        int n = 10_000;
        Thread sender = new Thread(() -> {
            try {
                rank0.send(1, header(0, n), new Buf(DataType.FLOAT32, new float[n], 0, n));
            } catch (Throwable e) {
                sending.set(e);
            }
        });
        sender.start();
        return sender;
    }

    /** Whether {@code t} is parked (in a wait that spun out), not running or done. */
    private static boolean parked(Thread t) {
        Thread.State s = t.getState();
        return s == Thread.State.WAITING || s == Thread.State.TIMED_WAITING;
    }

    private static void assertClosed(Executable e) {
        JcclException x = assertThrows(JcclException.class, e);
        assertTrue(x.getMessage().contains("the shared-memory transport is closed"), x.getMessage());
    }

    @Test
    void aCloseDuringAnotherThreadsWaitsShouldEndThemWithAnException(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir, 2);
        SharedArena arena = t[0].arena();
        AtomicReference<Throwable> receiving = new AtomicReference<>();
        AtomicReference<Throwable> waiting = new AtomicReference<>();
        AtomicReference<Throwable> reducing = new AtomicReference<>();
        java.util.concurrent.atomic.AtomicInteger reduces = new java.util.concurrent.atomic.AtomicInteger();
        Thread receiver = new Thread(() -> {
            try {
                t[0].receive(1, 0, System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
            } catch (Throwable e) {
                receiving.set(e);
            }
        });
        Thread waiter = new Thread(() -> {
            arena.enter();
            try {
                arena.await(SharedArena.ARRIVED, 1, System.nanoTime() + TimeUnit.SECONDS.toNanos(30));
            } catch (Throwable e) {
                waiting.set(e);
            } finally {
                arena.exit();
            }
        });
        Thread reducer = new Thread(() -> {
            Buf acc = Buf.allocate(DataType.FLOAT32, 1024);
            try {
                while (true) { // reads rank 1's mapping until the close stops it
                    t[0].arena().reduce(1, 0, 0, acc, ReduceOp.SUM);
                    t[0].arena().reduce(1, 1, 0, new Buf(DataType.INT32, new int[1024], 0, 1024), ReduceOp.MAX);
                    reduces.incrementAndGet();
                }
            } catch (Throwable e) {
                reducing.set(e);
            }
        });
        receiver.start();
        waiter.start();
        reducer.start();
        // the close comes once the receiver and the waiter have parked in their waits and the reducer has reduced
        boolean receiverParked = false;
        boolean waiterParked = false;
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!(receiverParked && waiterParked && reduces.get() > 0) && System.nanoTime() < until) {
            receiverParked |= parked(receiver);
            waiterParked |= parked(waiter);
            Thread.onSpinWait();
        }
        assertTrue(receiverParked && waiterParked && reduces.get() > 0, "not all in their waits: receiver "
                + receiver.getState() + ", waiter " + waiter.getState() + ", " + reduces.get() + " reductions; "
                + receiving.get() + " " + waiting.get() + " " + reducing.get());
        t[0].close();
        receiver.join(10_000);
        waiter.join(10_000);
        reducer.join(10_000);
        // rank 1 closes only now: its goodbye must not race the close of rank 0 into the receiver's wait
        t[1].close();
        assertFalse(receiver.isAlive() || waiter.isAlive() || reducer.isAlive());
        for (Throwable e : new Throwable[] {receiving.get(), waiting.get(), reducing.get()}) {
            assertInstanceOf(JcclException.class, e);
            assertTrue(e.getMessage().contains("the shared-memory transport is closed"), e.getMessage());
        }
        assertFalse(t[0].segmentFile().exists());
        assertFalse(t[1].segmentFile().exists());
    }

    @Test
    void everyOperationAfterCloseShouldThrowAJcclException(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir, 2);
        SharedArena a = t[0].arena();
        Tensor registered = a.allocate(DataType.FLOAT32, 16);
        t[0].close();
        t[0].close(); // twice is fine
        Buf b = Buf.allocate(DataType.FLOAT32, 4);
        assertClosed(() -> t[0].send(1, header(0, 4), Buf.allocate(DataType.FLOAT32, 4)));
        assertClosed(() -> t[0].receive(1, 0, System.nanoTime() + 1_000_000_000L));
        assertClosed(() -> t[0].peekHeader(1, 0));
        assertClosed(() -> t[0].pendingAbort(1, 0));
        assertClosed(a::enter);
        assertClosed(() -> a.put(0, 0, b));
        assertClosed(() -> a.get(1, 0, 0, b));
        assertClosed(() -> a.reduce(1, 0, 0, b, ReduceOp.SUM));
        assertClosed(() -> a.counter(1, SharedArena.ARRIVED));
        assertClosed(() -> a.publish(SharedArena.ARRIVED, 1));
        assertClosed(() -> a.allocate(DataType.FLOAT32, 4));
        assertClosed(() -> a.exposeRegistered(registered));
        t[0].abortPeers(new int[] {1}, header(0, 0), "late"); // best effort: nothing, no exception
        // an interrupt after close is still reported, and the peer learnt that rank 0 left
        t[0].interrupt(new Frame(header(FrameDescriptor.TYPE_ABORT, 0, 0), new byte[0]));
        assertNotNull(t[0].pendingAbort(1, 0));
        Frame bye = t[1].receive(0, 0, System.nanoTime() + 5_000_000_000L);
        assertNotNull(bye);
        assertTrue(bye.isDeparture());
        t[1].close();
    }

    /**
     * A send waiting for room in the ring of a peer that closed (its goodbye drained, so its pid is no longer
     * watched) used to wait forever: in CI a rank of a pipelined hierarchical allreduce hung so after its local
     * peer left on an abort from another host. It fails now, naming the peer, as soon as the goodbye is seen.
     */
    @Test
    void aSendIntoTheFullRingOfAPeerThatClosedShouldFailNamingIt(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir, 2);
        t[1].close(); // rank 1 reads nothing any more; 40 KB cannot fit in its 4 KiB ring
        int n = 10_000;
        io.jccl.transport.PeerLostException e = assertThrows(io.jccl.transport.PeerLostException.class,
                () -> t[0].send(1, header(0, n), new Buf(DataType.FLOAT32, new float[n], 0, n)));
        assertEquals(1, e.peer());
        assertTrue(e.getMessage().contains("rank 1 closed its communicator while rank 0 was sending to it"),
                e.getMessage());
        t[0].close();
    }

    /**
     * The same wait ends on an abort of the frame's communicator: here this rank's own (another thread's failure,
     * through {@code interrupt}), while the peer lives but reads nothing.
     */
    @Test
    void aSendIntoAFullRingShouldEndOnAnAbortOfItsCommunicator(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir, 2);
        AtomicReference<Throwable> sending = new AtomicReference<>();
        Thread sender = sendTooMuch(t[0], sending);
        Thread.sleep(300);
        assertTrue(sender.isAlive(), "the send waits for room while rank 1 reads nothing");
        byte[] why = "rank 0 failed across hosts".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        t[0].interrupt(new Frame(header(FrameDescriptor.TYPE_ABORT, 0, why.length), why));
        sender.join(10_000);
        assertFalse(sender.isAlive());
        io.jccl.transport.PeerLostException e = assertInstanceOf(io.jccl.transport.PeerLostException.class,
                sending.get());
        assertEquals("rank 0 failed across hosts", e.getMessage());
        t[0].close();
        t[1].close();
    }

    /**
     * An abort reaches a peer whose ring from this rank is full (it reads nothing: waiting on another host, say). It
     * was dropped, and the peer, once it drained the ring, waited for its deadline for frames that never came. Here
     * two communicators abort (a rank's communicators share its rings), and the peer is already waiting on the
     * first's stream (it has a queue there): the frames sent before the abort still come before it.
     */
    @Test
    void anAbortShouldReachAPeerWhoseRingIsFull(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir, 2);
        int a = io.jccl.transport.Streams.collective(5);
        int b = io.jccl.transport.Streams.collective(6);
        assertEquals(null, t[1].receive(0, a, System.nanoTime()), "nothing sent yet");
        int frames = 0;
        while (t[0].send(1, header(FrameDescriptor.TYPE_DATA, 0, 1, a), new Buf(DataType.FLOAT32, new float[1], 0, 1),
                System.nanoTime())) {
            frames++;
        }
        assertTrue(frames > 10, "the 4 KiB ring takes " + frames + " frames of one float");
        t[0].abortPeers(new int[] {1}, header(FrameDescriptor.TYPE_ABORT, 0, 0, a), "rank 0 failed: A");
        t[0].abortPeers(new int[] {1}, header(FrameDescriptor.TYPE_ABORT, 0, 0, b), "rank 0 failed: B");
        Frame abortA = t[1].pendingAbort(0, a); // drains the ring and the mailbox
        Frame abortB = t[1].pendingAbort(0, b);
        assertNotNull(abortA, "the abort of A was lost");
        assertNotNull(abortB, "the abort of B was lost");
        assertEquals("rank 0 failed: A", new String((byte[]) abortA.payload(), java.nio.charset.StandardCharsets.UTF_8));
        assertEquals("rank 0 failed: B", new String((byte[]) abortB.payload(), java.nio.charset.StandardCharsets.UTF_8));
        for (int i = 0; i < frames; i++) { // the frames sent before it are all there, before it
            Frame f = t[1].receive(0, a, System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
            assertFalse(f.header().isAbort(), "frame " + i + " of " + frames + " came after the abort");
        }
        assertTrue(t[1].receive(0, a, System.nanoTime() + TimeUnit.SECONDS.toNanos(5)).header().isAbort());
        t[0].close();
        t[1].close();
    }

    /**
     * A rank that closes while its ring to a peer is full still tells it: after two seconds of trying the ring, the
     * goodbye goes to the peer's mailbox. It was dropped, and the peer (whose process sees this rank's still alive)
     * waited for its deadline.
     */
    @Test
    void aGoodbyeShouldReachAPeerWhoseRingIsFull(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir, 2);
        int frames = 0;
        while (t[0].send(1, header(0, 1), new Buf(DataType.FLOAT32, new float[1], 0, 1), System.nanoTime())) {
            frames++;
        }
        t[0].close();
        Frame bye = t[1].pendingAbort(0, 0);
        assertNotNull(bye, "the goodbye was lost");
        assertTrue(bye.isDeparture(), bye.header().toString());
        for (int i = 0; i < frames; i++) { // the frames sent before it come first
            assertFalse(t[1].receive(0, 0, System.nanoTime() + TimeUnit.SECONDS.toNanos(5)).isDeparture());
        }
        assertTrue(t[1].receive(0, 0, System.nanoTime() + TimeUnit.SECONDS.toNanos(5)).isDeparture());
        t[1].close();
    }

    /**
     * An abort reaches a peer while another thread of this rank holds the ring to it (here: waiting for room for a
     * frame in fragments). It was dropped: the abort went only where the ring's lock could be taken at once.
     */
    @Test
    void anAbortShouldReachAPeerWhileAnotherThreadHoldsTheRingToIt(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir, 2);
        AtomicReference<Throwable> sending = new AtomicReference<>();
        Thread sender = sendTooMuch(t[0], sending);
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!t[0].sendLockHeld(1) && sender.isAlive() && System.nanoTime() < until) {
            Thread.onSpinWait(); // 40 KB cannot pass a 4 KiB ring nobody drains: once held, held until rank 1 reads
        }
        assertTrue(t[0].sendLockHeld(1), "the sender holds the ring to rank 1: " + sender.getState() + " "
                + sending.get());
        t[0].abortPeers(new int[] {1}, header(FrameDescriptor.TYPE_ABORT, 0, 0), "rank 0 failed mid-send");
        Frame abort = t[1].pendingAbort(0, 0);
        assertNotNull(abort, "the abort was lost");
        assertEquals("rank 0 failed mid-send",
                new String((byte[]) abort.payload(), java.nio.charset.StandardCharsets.UTF_8));
        t[1].close(); // the sender ends: its peer left
        sender.join(10_000);
        assertFalse(sender.isAlive());
        t[0].close();
    }

    @Test
    void framesShouldCrossTheRingsInFragmentsBothWays(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir, 2);
        int n = 10_000; // 40 KB through 4 KiB rings: fragments of at most 512 bytes, both ways at once
        float[][] data = new float[2][n];
        for (int i = 0; i < n; i++) {
            data[0][i] = i;
            data[1][i] = -i;
        }
        // no background threads: a rank drains its rings only while it waits (to send or to receive), so each
        // rank sends and then receives, as a rank of a collective does
        AtomicReference<Frame> received = new AtomicReference<>();
        Thread other = new Thread(() -> {
            t[1].send(0, header(1, n), new Buf(DataType.FLOAT32, data[1], 0, n));
            try {
                received.set(t[1].receive(0, 0, System.nanoTime() + 10_000_000_000L));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        other.start();
        t[0].send(1, header(0, n), new Buf(DataType.FLOAT32, data[0], 0, n));
        Frame at0 = t[0].receive(1, 0, System.nanoTime() + 10_000_000_000L);
        other.join();
        Frame at1 = received.get();
        assertEquals(n, at0.header().payloadCount());
        assertEquals(n, at1.header().payloadCount());
        for (int i = 0; i < n; i++) {
            assertEquals(-i, ((float[]) at0.payload())[i]);
            assertEquals(i, ((float[]) at1.payload())[i]);
        }
        t[0].close();
        t[1].close();
    }

    @Test
    void onlyTensorsFromAllocateShouldBeExposedInPlace(@TempDir Path dir) {
        ShmTransport[] t = connect(dir, 2);
        try {
            SharedArena a = t[0].arena();
            Tensor mine = a.allocate(DataType.FLOAT32, 64);
            assertTrue(mine.byteBuffer().isDirect());
            assertTrue(a.exposeRegistered(mine));
            assertFalse(a.exposeRegistered(Tensor.of(new float[64])));
            assertFalse(a.exposeRegistered(Tensor.of(ByteBuffer.allocateDirect(256), DataType.FLOAT32)));
            assertFalse(t[1].arena().exposeRegistered(mine), "another rank's region");
            // what rank 0 writes into its allocated tensor, rank 1 reads in place
            ByteBuffer w = mine.byteBuffer();
            for (int i = 0; i < 64; i++) {
                w.putFloat(i * 4, i * 0.5f);
            }
            Buf out = Buf.allocate(DataType.FLOAT32, 64);
            t[1].arena().get(0, SharedArena.EXPOSED, 0, out);
            for (int i = 0; i < 64; i++) {
                assertEquals(i * 0.5f, ((float[]) out.array())[i]);
            }
            assertThrows(IndexOutOfBoundsException.class, () -> t[1].arena().get(0, SharedArena.EXPOSED, 8192, out));
            assertThrows(IllegalArgumentException.class, () -> a.allocate(DataType.FLOAT32, 4096));
        } finally {
            t[0].close();
            t[1].close();
        }
    }
}
