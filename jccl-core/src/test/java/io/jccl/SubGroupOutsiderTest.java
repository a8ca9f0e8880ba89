package io.jccl;

import io.jccl.buffer.Buf;
import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.PostedReceive;
import io.jccl.transport.Transport;
import io.jccl.transport.local.QueueMesh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A process outside a sub-group that dies reaches the group's calls (a transport that loses a peer aborts every
 * communicator over it), and must be named as what it is: its parent rank is some member's number in the group.
 * A world of 4 split into {0, 2}: world rank 1 died, and the group's call said "aborted because rank 1 failed"
 * (world rank 2, alive), then relayed it so that world rank 2 itself was blamed by the others.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SubGroupOutsiderTest {

    /** A transport among threads that can be made to lose a peer, as a process's transport does when one dies. */
    private static final class Losing implements Transport {
        private final Transport t;
        private volatile Frame lost;

        Losing(Transport t) {
            this.t = t;
        }

        /** From now on every wait of every communicator ends on {@code peer}'s death (as Inbox.peerLost). */
        void lose(int peer, String reason) {
            lost = Frame.peerGone(peer, reason);
        }

        private Frame orLost(Frame f) {
            return f != null ? f : lost;
        }

        @Override public int rank() { return t.rank(); }
        @Override public int size() { return t.size(); }
        @Override public String name() { return t.name(); }
        @Override public void send(int dst, FrameHeader h, Buf p) { t.send(dst, h, p); }
        @Override public Frame receive(int src, int stream, long deadline) throws InterruptedException {
            return receive(src, stream, deadline, null);
        }
        @Override public void post(int src, int stream, PostedReceive p) { t.post(src, stream, p); }
        @Override public Frame receive(int src, int stream, long deadline, PostedReceive p)
                throws InterruptedException {
            while (true) { // in slices, looking for the loss between them
                long slice = Math.min(deadline, System.nanoTime() + 5_000_000L);
                Frame f = p == null ? t.receive(src, stream, slice) : t.receive(src, stream, slice, p);
                if (f != null || lost != null || System.nanoTime() - deadline >= 0) {
                    return orLost(f);
                }
            }
        }
        @Override public FrameHeader peekHeader(int src, int stream) { return t.peekHeader(src, stream); }
        @Override public void release(Frame f) { t.release(f); }
        @Override public Frame pendingAbort(int src, int stream) { return orLost(t.pendingAbort(src, stream)); }
        @Override public void abortPeers(int[] peers, FrameHeader h, String reason) { t.abortPeers(peers, h, reason); }
        @Override public void interrupt(Frame abort) { t.interrupt(abort); }
        @Override public void close() { t.close(); }
    }

    @Test
    void aDeadProcessOutsideTheGroupShouldBeNamedByItsWorldRankOnEveryMember() throws Exception {
        QueueMesh mesh = QueueMesh.create(4);
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(20));
        List<Losing> transports = new ArrayList<>();
        List<Communicator> comms = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            transports.add(new Losing(mesh.endpoint(r)));
            comms.add(new DefaultCommunicator(transports.get(r), config));
        }
        String died = "rank 1 (pid 4242) died: its process is gone";
        CountDownLatch firstFailed = new CountDownLatch(1);
        List<CompletableFuture<Throwable>> out = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            int rank = r;
            out.add(CompletableFuture.supplyAsync(() -> {
                Communicator comm = comms.get(rank);
                Communicator group = comm.split(rank % 2 == 0 ? 0 : Communicator.UNDEFINED, rank); // {0, 2}
                if (group == null) {
                    return null;
                }
                try {
                    if (rank == 0) { // only world rank 0 has noticed the death: world rank 2 learns it from rank 0
                        transports.get(0).lose(1, died);
                    } else {
                        firstFailed.await(20, TimeUnit.SECONDS);
                    }
                    group.barrier();
                    return null;
                } catch (Throwable e) {
                    return e;
                } finally {
                    firstFailed.countDown();
                    group.close();
                }
            }, job -> new Thread(job, "jccl-test-rank").start()));
        }
        try {
            for (int r : new int[] {0, 2}) {
                Throwable e = out.get(r).get(30, TimeUnit.SECONDS);
                int rank = r;
                PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, e, () -> "rank " + rank + ": " + e);
                assertTrue(a.getMessage().contains("aborted because world rank 1 (not in this group) failed: " + died),
                        "world rank " + r + ": " + a.getMessage());
                assertEquals(-1, a.originRank(), a.getMessage()); // no member is blamed
                assertEquals(1, a.outsideOrigin(), a.getMessage());
                assertFalse(a.getMessage().contains("because rank 1 failed"), a.getMessage());
            }
            assertNull(out.get(1).get(30, TimeUnit.SECONDS));
            assertNull(out.get(3).get(30, TimeUnit.SECONDS));
        } finally {
            TransportKind.closeAll(comms);
        }
    }

    /** The root of nested sub-transports: reports an abort from a given source, records the sources it is given. */
    private static final class Root implements Transport {
        volatile int abortFrom;
        volatile int abortedAs = -1;

        @Override public int rank() { return 0; }
        @Override public int size() { return 6; }
        @Override public String name() { return "root"; }
        @Override public void send(int dst, FrameHeader h, Buf p) { throw new UnsupportedOperationException(); }
        @Override public Frame receive(int src, int stream, long deadline) { return null; }
        @Override public FrameHeader peekHeader(int src, int stream) { return null; }
        @Override public Frame pendingAbort(int src, int stream) { return Frame.peerGone(abortFrom, "gone"); }
        @Override public void abortPeers(int[] peers, FrameHeader h, String reason) { abortedAs = h.source(); }
        @Override public void interrupt(Frame abort) { }
        @Override public void close() { }
    }

    /** Nested groups: world {0..5}, group {0, 2, 4}, its group {0, 2} (world {0, 4}). */
    @Test
    void nestedGroupsShouldCarryEveryOutsiderByItsWorldRankBothWays() {
        Root root = new Root();
        io.jccl.transport.SubTransport outer = new io.jccl.transport.SubTransport(root, new int[] {0, 2, 4}, 0);
        io.jccl.transport.SubTransport inner = new io.jccl.transport.SubTransport(outer, new int[] {0, 2}, 0);
        FrameHeader abort = Frame.peerGone(0, "x").header();
        for (int world = 0; world < 6; world++) {
            root.abortFrom = world;
            int source = inner.pendingAbort(1, 0).header().source();
            int expected = world == 0 ? 0 : world == 4 ? 1 : -1;
            if (expected >= 0) {
                assertEquals(expected, source, "world rank " + world + ", a member");
                assertEquals(-1, inner.outsiderWorldRank(source));
            } else {
                assertEquals(world, inner.outsiderWorldRank(source), "world rank " + world + " came as " + source);
            }
            // relayed back down (FailurePropagation.notifyPeers), it names the same process at the root
            inner.abortPeers(new int[] {1}, abort.withSource(source), "relayed");
            assertEquals(world, root.abortedAs, "world rank " + world + " relayed as " + source);
        }
    }
}
