package io.jccl.transport.tcp;

import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.TransportKind;
import io.jccl.buffer.Buf;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.PostedReceive;
import io.jccl.transport.Streams;
import io.jccl.transport.Transport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a TCP rank says and leaves behind when its reader fails, its peer closed or died during a send, it closed
 * during its own send, or it cannot listen.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpConnectionFaultsTest {
    /**
     * A thread per task: the common pool has one thread on JDK 25 with 2 cores, and a task that blocks there (a send
     * waiting for its peer) would hold every later test's.
     */
    private static final java.util.concurrent.Executor THREAD = r -> {
        Thread t = new Thread(r, "test-async");
        t.setDaemon(true);
        t.start();
    };

    private static final int STREAM = Streams.collective(0);

    /**
     * An {@link Error} on the reader (here from a posted receive's check; in practice no memory for a frame that came
     * before its receive) ends the wait for the peer's frame with the reason, not at the deadline: the reader caught
     * only exceptions, died of the error, and the receive waited its whole timeout.
     */
    @Test
    void anErrorOnTheReaderFailsTheReceiveAtOnce() throws Exception {
        List<Transport> ts = TransportKind.TCP.connect(2);
        try {
            float[] dst = new float[2];
            PostedReceive failing = new PostedReceive(new Buf(DataType.FLOAT32, dst, 0, dst.length), null) {
                @Override
                protected boolean accepts(FrameHeader h) {
                    throw new AssertionError("a defect in a receive's check");
                }
            };
            FrameHeader h = new FrameHeader(FrameDescriptor.TYPE_DATA, OpType.ALL_REDUCE.id(), DataType.FLOAT32.id(),
                    0xFF, 0xFF, 0, -1, 1, 2, 0, 2, STREAM);
            Thread sender = new Thread(() -> {
                try {
                    Thread.sleep(300);
                } catch (InterruptedException e) {
                    return;
                }
                ts.get(0).send(1, h, new Buf(DataType.FLOAT32, new float[] {1, 2}, 0, 2),
                        System.nanoTime() + 10_000_000_000L);
            });
            sender.start();
            long t0 = System.nanoTime();
            Frame f = ts.get(1).receive(0, STREAM, System.nanoTime() + 20_000_000_000L, failing);
            long tookMs = (System.nanoTime() - t0) / 1_000_000;
            sender.join();
            assertNotNull(f, "the receive ended at its deadline (" + tookMs + " ms) instead of failing");
            assertTrue(f.header().isAbort(), "an abort frame, not data");
            String why = new String((byte[]) f.payload(), StandardCharsets.UTF_8);
            assertTrue(why.contains("reader of the connection from rank 0 failed") && why.contains("AssertionError"),
                    why);
            assertTrue(tookMs < 10_000, "took " + tookMs + " ms");
        } finally {
            for (Transport t : ts) {
                t.close();
            }
        }
    }

    /**
     * A send to a peer that closed cleanly (it said goodbye) says so, not that the peer's process died or was
     * killed.
     */
    @Test
    void aSendToAPeerThatSaidGoodbyeSaysItClosed() throws Exception {
        List<Transport> ts = TransportKind.TCP.connect(2);
        try {
            ts.get(1).close();
            Frame bye = ts.get(0).receive(1, STREAM, System.nanoTime() + 20_000_000_000L);
            assertNotNull(bye, "rank 1's goodbye");
            assertTrue(bye.isDeparture(), "a departure");
            float[] big = new float[16 << 20];
            FrameHeader h = new FrameHeader(FrameDescriptor.TYPE_DATA, OpType.ALL_REDUCE.id(), DataType.FLOAT32.id(),
                    0xFF, 0xFF, 0, -1, 1, big.length, 0, big.length, STREAM);
            io.jccl.transport.PeerLostException e = org.junit.jupiter.api.Assertions.assertThrows(
                    io.jccl.transport.PeerLostException.class, () -> {
                        for (int i = 0; i < 8; i++) { // the first write may still fit the socket's buffers
                            ts.get(0).send(1, h, new Buf(DataType.FLOAT32, big, 0, big.length),
                                    System.nanoTime() + 20_000_000_000L);
                        }
                    });
            assertTrue(e.getMessage().contains("rank 1 closed its communicator while rank 0 was sending to it"),
                    e.getMessage());
        } finally {
            for (Transport t : ts) {
                t.close();
            }
        }
    }

    /**
     * A send in flight when this rank closes its own transport (on another thread) fails saying the transport is
     * closed: close() shut the socket under the write, and the send reported that the connection to rank 1 was lost
     * because "the process died or was killed", blaming a live peer for this rank's own close. Rank 1's reader is
     * held in a posted receive's check, so that the 64 MiB write fills the sockets' buffers and waits in the kernel.
     */
    @Test
    void aSendInFlightWhenThisRankClosesSaysTheTransportIsClosed() throws Exception {
        withTwoRanks((ts, release) -> {
            java.util.concurrent.CompletableFuture<Void> sent = sendWhileRank1StopsReading(ts, release);
            ts.get(0).close();
            java.util.concurrent.ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(
                    java.util.concurrent.ExecutionException.class, () -> sent.get(20, TimeUnit.SECONDS));
            org.junit.jupiter.api.Assertions.assertEquals(io.jccl.JcclException.class, e.getCause().getClass(),
                    e.getCause().toString());
            org.junit.jupiter.api.Assertions.assertEquals("rank 0: the TCP transport is closed",
                    e.getCause().getMessage());
        });
    }

    /**
     * The other side of the one above: a send in flight when the peer's process dies (here its socket closed under
     * its reader, without a goodbye) is still a loss of that peer, named.
     */
    @Test
    void aSendInFlightWhenThePeerDiesNamesThePeerLost() throws Exception {
        withTwoRanks((ts, release) -> {
            java.util.concurrent.CompletableFuture<Void> sent = sendWhileRank1StopsReading(ts, release);
            java.lang.reflect.Field peers = TcpTransport.class.getDeclaredField("peers");
            peers.setAccessible(true);
            TcpConnector.closeQuietly(((TcpConnection[]) peers.get(ts.get(1)))[0].channel); // rank 1 "dies"
            java.util.concurrent.ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(
                    java.util.concurrent.ExecutionException.class, () -> sent.get(20, TimeUnit.SECONDS));
            io.jccl.transport.PeerLostException lost = org.junit.jupiter.api.Assertions.assertInstanceOf(
                    io.jccl.transport.PeerLostException.class, e.getCause(), e.getCause().toString());
            org.junit.jupiter.api.Assertions.assertEquals(1, lost.peer());
            assertTrue(lost.getMessage().contains("connection to rank 1 lost"), lost.getMessage());
        });
    }

    /**
     * A thread interrupted in a send over TCP (Future.cancel(true), shutdownNow) makes the JDK close the socket under
     * it. That is this rank's doing: the send said that the connection to rank 1 was lost because "the process died
     * or was killed", and the call then named the live rank 1 as the rank at fault on every rank. Now the send says
     * that a thread of rank 0 was interrupted, and rank 0's reader of that connection says the same to the receives.
     */
    @Test
    void aSendWhoseThreadIsInterruptedBlamesThisRankNotThePeer() throws Exception {
        withTwoRanks((ts, release) -> {
            Thread[] sender = new Thread[1];
            java.util.concurrent.CompletableFuture<Boolean> sent = sendWhileRank1StopsReading(ts, release, h -> {
                sender[0] = Thread.currentThread();
                ts.get(0).send(1, h, BIG);
                return true;
            });
            sender[0].interrupt();
            java.util.concurrent.ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(
                    java.util.concurrent.ExecutionException.class, () -> sent.get(20, TimeUnit.SECONDS));
            Throwable t = e.getCause();
            org.junit.jupiter.api.Assertions.assertEquals(io.jccl.JcclException.class, t.getClass(), t.toString());
            assertTrue(t.getMessage().startsWith("rank 0 closed its connection to rank 1: a thread of rank 0 was "
                    + "interrupted while it sent to rank 1"), t.getMessage());
            // a receive from rank 1 on rank 0 fails saying the same, not that rank 1 died
            Frame f = null;
            Throwable r = null;
            try {
                f = ts.get(0).receive(1, STREAM, System.nanoTime() + TimeUnit.SECONDS.toNanos(20));
            } catch (RuntimeException x) {
                r = x;
            }
            assertTrue(r != null || f != null && f.header().isAbort(), "the receive waited out its deadline");
            String why = r != null ? r.getMessage() : new String((byte[]) f.payload(), StandardCharsets.UTF_8);
            assertTrue(why.contains("rank 0 closed its connection to rank 1") && !why.contains("died"), why);
            // and it names rank 0 as the origin, which the job then names as the rank at fault, not rank 1
            if (f != null) {
                org.junit.jupiter.api.Assertions.assertEquals(0, f.header().source(), "the origin of " + why);
            } else {
                assertTrue(!(r instanceof io.jccl.transport.PeerLostException)
                        || ((io.jccl.transport.PeerLostException) r).peer() == 0, r.toString());
            }
        });
    }

    /**
     * A send blocked in the socket (rank 1 stopped reading) with a long deadline ends soon after this rank aborts
     * the communicator whose send it is (Communicator.abort, or the other thread of a pipelined call failing): it
     * waited for its own deadline, the call's (30 minutes by default), as an abort only reached the inbox, which a
     * thread in a socket write never looks at. Now the write is given a deadline of now, and the watchdog closes the
     * connection once rank 1 has taken nothing for a second.
     */
    @Test
    void aSendBlockedInTheSocketEndsSoonAfterAnAbortOfItsCommunicator() throws Exception {
        withTwoRanks((ts, release) -> {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(50);
            java.util.concurrent.CompletableFuture<Boolean> sent = sendWhileRank1StopsReading(ts, release,
                    h -> ts.get(0).send(1, h, BIG, deadline));
            byte[] why = "the test gave up".getBytes(StandardCharsets.UTF_8);
            long start = System.nanoTime();
            ts.get(0).interrupt(new Frame(new FrameHeader(FrameDescriptor.TYPE_ABORT, OpType.BARRIER.id(),
                    DataType.UINT8.id(), 0xFF, 0xFF, 0, -1, 0, 0, 0, why.length, STREAM), why));
            // a bound against waiting out the 50 s deadline, not a speed
            Boolean done = sent.get(30, TimeUnit.SECONDS);
            long ms = (System.nanoTime() - start) / 1_000_000;
            org.junit.jupiter.api.Assertions.assertFalse(done, "the send was cut, not completed");
            assertTrue(ms < 20_000, "the send took " + ms + " ms to end after the abort");
        });
    }

    /** A test's body, given two TCP ranks and the latch that lets rank 1's held reader go. */
    @FunctionalInterface
    private interface TwoRanks {
        void run(List<Transport> ts, java.util.concurrent.CountDownLatch release) throws Exception;
    }

    /** Runs {@code body} on two TCP ranks; afterwards releases rank 1's reader, if held, and closes both. */
    private static void withTwoRanks(TwoRanks body) throws Exception {
        List<Transport> ts = TransportKind.TCP.connect(2);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        try {
            body.run(ts, release);
        } finally {
            release.countDown();
            for (Transport t : ts) {
                t.close();
            }
        }
    }

    private static final Buf BIG = new Buf(DataType.FLOAT32, new float[16 << 20], 0, 16 << 20);

    /**
     * Starts a 64 MiB send from rank 0 to rank 1 (no deadline) on a thread of its own, once rank 1's reader is held
     * in the check of a receive posted for it until {@code release}; returns when the send has had time to fill the
     * sockets' buffers and wait in the kernel.
     */
    private static java.util.concurrent.CompletableFuture<Void> sendWhileRank1StopsReading(
            List<Transport> ts, java.util.concurrent.CountDownLatch release) throws InterruptedException {
        return sendWhileRank1StopsReading(ts, release, h -> {
            ts.get(0).send(1, h, BIG);
            return true;
        }).thenApply(b -> null);
    }

    /** As above, the send being {@code send} (given the frame's header) on the thread it runs on. */
    private static <T> java.util.concurrent.CompletableFuture<T> sendWhileRank1StopsReading(
            List<Transport> ts, java.util.concurrent.CountDownLatch release,
            java.util.function.Function<FrameHeader, T> send) throws InterruptedException {
        java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
        ts.get(1).post(0, STREAM, new PostedReceive(new Buf(DataType.FLOAT32, new float[1], 0, 1), null) {
            @Override
            protected boolean accepts(FrameHeader h) {
                held.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return false;
            }
        });
        FrameHeader h = new FrameHeader(FrameDescriptor.TYPE_DATA, OpType.ALL_REDUCE.id(), DataType.FLOAT32.id(),
                0xFF, 0xFF, 0, -1, 1, BIG.count(), 0, BIG.count(), STREAM);
        java.util.concurrent.CompletableFuture<T> sent = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> send.apply(h), THREAD);
        assertTrue(held.await(20, TimeUnit.SECONDS), "rank 1's reader never saw the frame");
        Thread.sleep(500);
        org.junit.jupiter.api.Assertions.assertFalse(sent.isDone(), "the send was to wait for rank 1 to read");
        return sent;
    }

    /**
     * A store whose reads fail once {@link #fail} is called, as the rendezvous's does once a rank has published that
     * its set-up failed (SetupStore): the TCP transport's seam to that failure.
     */
    private static final class FailingStore extends io.jccl.store.ForwardingStore {
        private volatile String failure;

        FailingStore() {
            super(new io.jccl.store.InMemoryStore());
        }

        void fail(String why) {
            failure = why;
        }

        @Override
        public byte[] get(String key, java.time.Duration timeout) {
            if (failure != null) {
                throw new io.jccl.JcclException("the transports cannot be set up: " + failure, null);
            }
            return inner.get(key, timeout);
        }
    }

    /**
     * A rank waiting for a higher rank to dial in, or dialling a lower rank whose listener is gone, ends its wait
     * once the store says a rank's set-up failed, with that reason: it waited until the connect timeout (20 s
     * here), saying only that the peer did not connect (the rendezvous's store publishes the failure, and its reads
     * throw it; the waits for the peers' connections never read the store). A bound against waiting it out, not a
     * speed.
     */
    @Test
    void aWaitForThePeersEndsWhenTheStoreSaysASetUpFailed() throws Exception {
        io.jccl.security.JobSecret secret = io.jccl.security.JobSecret.generate();
        TcpOptions options = TcpOptions.loopback(secret).withConnectTimeout(java.time.Duration.ofSeconds(20));
        // rank 0 of 2 waits for rank 1 to dial in; rank 1 of 2 dials a rank 0 that no longer listens
        int closedPort;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            closedPort = probe.getLocalPort();
        }
        for (int rank = 0; rank < 2; rank++) {
            FailingStore store = new FailingStore();
            store.setString("tcp/addr/0", "127.0.0.1:" + closedPort); // rank 1's view: rank 0 listened there
            int r = rank;
            java.util.concurrent.CompletableFuture<TcpTransport> connecting =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> TcpTransport.connect(r, 2, store,
                            options), THREAD);
            Thread.sleep(300);
            long t0 = System.nanoTime();
            store.fail("rank 2: it could not listen");
            java.util.concurrent.ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(
                    java.util.concurrent.ExecutionException.class, () -> connecting.get(30, TimeUnit.SECONDS));
            long tookMs = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(e.getCause().getMessage().contains("the transports cannot be set up: rank 2: it could not "
                    + "listen"), "rank " + rank + ": " + e.getCause());
            assertTrue(tookMs < 10_000, "rank " + rank + " took " + tookMs + " ms of its 20 s connect timeout");
        }
    }

    /**
     * A bind address that is not this host's fails the rank's start naming the rank and the address, and leaves no
     * socket open (the listening socket was left open on every failed bind); one that does not resolve says so (it
     * was an unnamed exception).
     */
    @Test
    void aBadBindAddressFailsClearlyAndLeaksNoSocket() throws Exception {
        io.jccl.security.JobSecret secret = io.jccl.security.JobSecret.generate();
        io.jccl.store.InMemoryStore store = new io.jccl.store.InMemoryStore();
        TcpOptions foreign = new TcpOptions("192.0.2.1", null, secret, java.time.Duration.ofSeconds(5), 1 << 20);
        long before = openFiles();
        for (int i = 0; i < 20; i++) {
            io.jccl.JcclException e = org.junit.jupiter.api.Assertions.assertThrows(io.jccl.JcclException.class,
                    () -> TcpTransport.connect(0, 2, store, foreign));
            assertTrue(e.getMessage().startsWith("rank 0: cannot listen on 192.0.2.1"), e.getMessage());
        }
        long after = openFiles();
        assertTrue(after - before < 10, "open files " + before + " -> " + after + " after 20 failed binds");
        TcpOptions unresolved = new TcpOptions("no-such-host.invalid", null, secret, java.time.Duration.ofSeconds(5),
                1 << 20);
        io.jccl.JcclException e = org.junit.jupiter.api.Assertions.assertThrows(io.jccl.JcclException.class,
                () -> TcpTransport.connect(1, 2, store, unresolved));
        assertTrue(e.getMessage().contains("rank 1: cannot listen on no-such-host.invalid: the name does not resolve"),
                e.getMessage());
    }

    /**
     * A lower rank that never publishes its address (it died after joining, or was never started) is named: the
     * wait said only "timed out ... waiting for key 'tcp/addr/0'".
     */
    @Test
    void aPeerThatNeverPublishesItsAddressIsNamed() {
        io.jccl.security.JobSecret secret = io.jccl.security.JobSecret.generate();
        TcpOptions options = TcpOptions.loopback(secret).withConnectTimeout(java.time.Duration.ofMillis(300));
        io.jccl.JcclException e = org.junit.jupiter.api.Assertions.assertThrows(io.jccl.JcclException.class,
                () -> TcpTransport.connect(1, 2, new io.jccl.store.InMemoryStore(), options));
        assertEquals("rank 1: rank 0 did not publish its TCP address within 300 ms (it stopped, failed before, or was "
                + "never started)", e.getMessage());
        assertTrue(e.getCause() instanceof io.jccl.store.StoreException, "the store's timeout is kept as the cause");
    }

    private static long openFiles() throws java.io.IOException {
        try (java.util.stream.Stream<java.nio.file.Path> s = java.nio.file.Files.list(java.nio.file.Path.of(
                "/proc/self/fd"))) {
            return s.count();
        }
    }

    /**
     * Ranks started with different world sizes: the rank that dials hears at once that the other's world differs,
     * with both sizes (it was accepted, and then heard only that the connection was lost).
     */
    @Test
    void aRankOfAnotherWorldSizeIsRefusedWithBothSizes() throws Exception {
        io.jccl.security.JobSecret secret = io.jccl.security.JobSecret.generate();
        io.jccl.store.InMemoryStore store = new io.jccl.store.InMemoryStore();
        // rank 0 gives up waiting for a rank 1 of its world after 10 s; rank 1 would retry for 60 s: it must fail at
        // the refusal, well before its own deadline (a bound against waiting it out, not a speed)
        TcpOptions options = new TcpOptions("127.0.0.1", "127.0.0.1", secret, java.time.Duration.ofSeconds(10),
                1 << 20);
        TcpOptions patient = new TcpOptions("127.0.0.1", "127.0.0.1", secret, java.time.Duration.ofSeconds(60),
                1 << 20);
        java.util.concurrent.CompletableFuture<TcpTransport> zero = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> TcpTransport.connect(0, 2, store, options), THREAD);
        long t0 = System.nanoTime();
        io.jccl.JcclException e = org.junit.jupiter.api.Assertions.assertThrows(io.jccl.JcclException.class,
                () -> TcpTransport.connect(1, 3, store, patient));
        long tookMs = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(e.getMessage().contains("rank 1: rank 0 at 127.0.0.1:") && e.getMessage().contains(
                "refused the connection: rank 0 is one of 2 ranks, this rank one of 3"), e.getMessage());
        assertTrue(tookMs < 30_000, "took " + tookMs + " ms of its 60 s connect timeout");
        java.util.concurrent.ExecutionException waited = org.junit.jupiter.api.Assertions.assertThrows(
                java.util.concurrent.ExecutionException.class, zero::get);
        assertTrue(waited.getCause().getMessage().contains("did not connect"), waited.getCause().getMessage());
    }
}
