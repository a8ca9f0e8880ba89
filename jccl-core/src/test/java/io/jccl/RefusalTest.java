package io.jccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A collective call that one rank refuses (a bad argument of its own) while its peers run it. Before, the refusing
 * rank threw alone and its peers waited for it until their deadline (30 minutes by default): now every peer that
 * runs the call fails at its next look, naming the refusing rank, the operation and the reason, and the
 * communicator fails on every rank. The communicators here wait 10 minutes, so a peer that waited for its deadline
 * would outlast each test's own limit and fail it.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RefusalTest {
    private static final Duration LONG = Duration.ofMinutes(10);

    /** What one rank saw: its call's failure, then its next call's. */
    private static final class Seen {
        final Throwable call;
        final Throwable next;

        Seen(Throwable call, Throwable next) {
            this.call = call;
            this.next = next;
        }
    }

    private static Throwable failureOf(Runnable r) {
        try {
            r.run();
            return null;
        } catch (RuntimeException e) {
            return e;
        }
    }

    /** Rank {@code refuser}'s refusal contains {@code reason}; every other rank failed naming it. */
    private static void assertPeersNamed(List<RankHarness.Outcome<Seen>> out, int refuser, String op,
                                         String reason) {
        for (int r = 0; r < out.size(); r++) {
            assertNull(out.get(r).error, "rank " + r + ": " + out.get(r).error);
            Seen s = out.get(r).value;
            int rank = r;
            assertNotNull(s.call, () -> "rank " + rank + "'s call returned normally");
            if (r == refuser) {
                assertInstanceOf(IllegalArgumentException.class, s.call, s.call::toString);
                assertTrue(s.call.getMessage().startsWith("rank " + r + ": ") && s.call.getMessage().contains(reason),
                        s.call.getMessage());
            } else {
                PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, s.call, s.call::toString);
                assertEquals(refuser, a.originRank(), a.getMessage());
                assertTrue(a.getMessage().contains("rank " + refuser + " refused its " + op + " #")
                        && a.getMessage().contains(reason), a.getMessage());
            }
            // the communicator failed on every rank, the refusing one too: its next call does not wait either
            assertInstanceOf(JcclException.class, s.next, () -> "rank " + rank + ": next call: " + s.next);
            // and it does not read as if another rank were at fault when the refusing rank is told of its own
            assertTrue(!s.next.getMessage().contains("aborted because rank " + r + " failed"), s.next.getMessage());
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void aBadArgumentOnOneRankFailsThePeersThatRunTheCall(TransportKind kind, Algorithm algorithm) throws Exception {
        List<RankHarness.Outcome<Seen>> out = RankHarness.run(kind, 3, LONG, algorithm, c -> {
            float[] in = {c.rank(), 1};
            float[] gathered = new float[c.rank() == 1 ? 5 : 6]; // rank 1's output is one short
            Throwable call = failureOf(() -> c.allGather(Tensor.of(in), Tensor.of(gathered)));
            return new Seen(call, failureOf(c::barrier));
        });
        assertPeersNamed(out, 1, "allGather", "output must hold 6 elements");
    }

    /**
     * A non-root's refusal of a broadcast that its peers may finish without it (a leaf of the tree; the root that
     * publishes and returns): every other rank either finishes the broadcast and the next call (everyone took the
     * call's number, so they are in step) or fails, at the broadcast or at the next call, naming the refusing rank
     * and its reason; never a bare mismatch, never a wait for the deadline.
     */
    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void aBroadcastThatPeersMayFinishWithoutTheRefusingRankNeverMisleads(TransportKind kind, Algorithm algorithm)
            throws Exception {
        List<RankHarness.Outcome<Throwable>> out = RankHarness.run(kind, 3, LONG, algorithm, c -> {
            float[] x = {c.rank() == 0 ? 7 : 0};
            Throwable call = failureOf(() -> c.broadcast(c.rank() == 2 ? null : Tensor.of(x), 0));
            if (c.rank() == 2) {
                assertInstanceOf(IllegalArgumentException.class, call);
                failureOf(c::barrier);
                return null;
            }
            if (call == null) {
                assertEquals(7f, x[0]); // finished: with the root's data
            }
            return call != null ? call : failureOf(c::barrier);
        });
        for (int r = 0; r < 2; r++) {
            Throwable e = out.get(r).value;
            assertNull(out.get(r).error, String.valueOf(out.get(r).error));
            if (e != null) {
                PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, e, "rank " + r + ": " + e);
                assertEquals(2, a.originRank(), a.getMessage());
                assertTrue(a.getMessage().contains("rank 2 refused its broadcast #0") && a.getMessage().contains(
                        "tensor is null"), a.getMessage());
            }
        }
    }

    /** A send refused to a rank that exists (a null tensor): that rank's receive fails, naming the sender. */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(TransportKind.class)
    void aSendRefusedToAnExistingRankFailsItsReceive(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<Seen>> out = RankHarness.run(kind, 2, LONG, c -> {
            Throwable call = c.rank() == 1 ? failureOf(() -> c.isend((Tensor) null, 0, 5).await())
                    : failureOf(() -> c.recv(Tensor.of(new float[2]), 1, 5));
            return new Seen(call, failureOf(c::barrier));
        });
        assertPeersNamed(out, 1, "send", "tensor is null");
    }

    /** The refusing rank's next send reaches the receiver first: the receiver still reports the refusal. */
    @Test
    void aReceiveThatMeetsTheSendAfterARefusedOneReportsTheRefusal() throws Exception {
        List<RankHarness.Outcome<Seen>> out = RankHarness.run(TransportKind.TCP, 2, LONG, c -> {
            if (c.rank() == 1) {
                Throwable call = failureOf(() -> c.send((Tensor) null, 0, 5));
                c.send(Tensor.of(new float[2]), 0, 5); // correct: it goes out, numbered after the refused one
                return new Seen(call, failureOf(c::barrier));
            }
            Thread.sleep(300); // the second send is in before this receive looks
            return new Seen(failureOf(() -> c.recv(Tensor.of(new float[2]), 1, 5)), failureOf(c::barrier));
        });
        assertPeersNamed(out, 1, "send", "tensor is null");
    }

    /** A send and its receive refused at both ends keep the pair in step: the next pair matches. */
    @Test
    void aSendAndItsReceiveRefusedAtBothEndsKeepThePairInStep() throws Exception {
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(TransportKind.SHM, 2, LONG, c -> {
            float[] x = {c.rank() + 1, 7};
            if (c.rank() == 0) {
                assertThrows(IllegalArgumentException.class, () -> c.send((Tensor) null, 1, 0));
                c.send(Tensor.of(x), 1, 0);
            } else {
                assertThrows(IllegalArgumentException.class, () -> c.recv((Tensor) null, 0, 0));
                c.recv(Tensor.of(x), 0, 0);
            }
            c.barrier();
            return x;
        });
        for (RankHarness.Outcome<float[]> o : out) {
            assertNull(o.error, String.valueOf(o.error));
            assertArrayEquals(new float[] {1, 7}, o.value);
        }
    }

    /** monitoredBarrier's rank 0 waits for every rank's arrival: a refusal ends that wait too. */
    @Test
    void aMonitoredBarrierRefusedByOneRankEndsRankZerosWait() throws Exception {
        List<RankHarness.Outcome<Seen>> out = RankHarness.run(TransportKind.SHM, 2, LONG, c -> new Seen(
                failureOf(() -> c.monitoredBarrier(c.rank() == 1 ? Duration.ZERO : LONG)), failureOf(c::barrier)));
        assertPeersNamed(out, 1, "barrier", "the timeout must be positive");
    }

    /** A rooted call whose root alone has a bad argument, and peers that come to the call after the notice. */
    @Test
    void aRootWithoutOutputFailsItsPeersThatComeLater() throws Exception {
        List<RankHarness.Outcome<Seen>> out = RankHarness.run(TransportKind.TCP, 3, LONG, c -> {
            if (c.rank() != 0) {
                Thread.sleep(300); // the root's notice comes before the call
            }
            float[] in = {c.rank()};
            Throwable call = failureOf(() -> c.gather(Tensor.of(in), c.rank() == 0 ? null : Tensor.of(new float[3]),
                    0));
            return new Seen(call, failureOf(() -> c.allReduce(in, ReduceOp.SUM)));
        });
        assertPeersNamed(out, 0, "gather", "output on the root is null");
    }

    /** An asynchronous call refused while an earlier one is queued: its turn still passes, and the peers learn. */
    @Test
    void anAsynchronousCallRefusedBehindAQueuedOneFailsThePeers() throws Exception {
        List<RankHarness.Outcome<Seen>> out = RankHarness.run(TransportKind.SHM, 2, LONG, c -> {
            float[] first = {c.rank() + 1};
            Work w = c.allReduceAsync(Tensor.of(first), ReduceOp.SUM);
            Throwable call = failureOf(() -> c.allReduceAsync(Tensor.of(new float[4]),
                    c.rank() == 1 ? ReduceOp.BXOR : ReduceOp.SUM).await());
            w.await(); // the first call, made before, ran everywhere
            assertArrayEquals(new float[] {3}, first);
            return new Seen(call, failureOf(c::barrier));
        });
        assertPeersNamed(out, 1, "allReduce", "BXOR");
    }

    /** Every rank refusing the same call keeps them in step: the communicator goes on, and no peer fails. */
    @Test
    void aCallEveryRankRefusesLeavesTheCommunicatorUsable() throws Exception {
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(TransportKind.TCP, 3, LONG, c -> {
            float[] x = {c.rank(), 1};
            assertThrows(IllegalArgumentException.class, () -> c.broadcast(x, 7));
            Thread.sleep(c.rank() * 100L); // the notices reach ranks that wait in the next call, and later ones
            c.allReduce(x, ReduceOp.SUM);
            c.barrier();
            return x;
        });
        for (RankHarness.Outcome<float[]> o : out) {
            assertNull(o.error, String.valueOf(o.error));
            assertArrayEquals(new float[] {3, 3}, o.value);
        }
    }

    /**
     * A ring allreduce's first send fills the ring towards the refusing rank (2 MiB against a 64 KiB ring) and waits
     * for room, which that rank, refusing and then busy outside jccl for 10 s, never makes: the sender's wait finds
     * the refusal and fails while that rank is still away, not when it next calls, nor at the deadline.
     */
    @Test
    void aSendWaitingForRoomTowardsTheRefusingRankEndsWhileThatRankIsAway() throws Exception {
        java.util.concurrent.atomic.AtomicLong back = new java.util.concurrent.atomic.AtomicLong(Long.MAX_VALUE);
        long[] failedAt = {0};
        List<RankHarness.Outcome<Seen>> out = RankHarness.run(TransportKind.SHM, 2, LONG, Algorithm.RING, c -> {
            float[] x = new float[1 << 20];
            if (c.rank() == 1) {
                Throwable call = failureOf(() -> c.allReduce((Tensor) null, ReduceOp.SUM));
                Thread.sleep(10_000); // away: nobody drains this rank's rings
                back.set(System.nanoTime());
                return new Seen(call, failureOf(c::barrier));
            }
            Throwable call = failureOf(() -> c.allReduce(Tensor.of(x), ReduceOp.SUM));
            failedAt[0] = System.nanoTime();
            return new Seen(call, failureOf(c::barrier));
        });
        assertPeersNamed(out, 1, "allReduce", "tensor is null");
        assertTrue(failedAt[0] - back.get() < 0, "the root failed only once the refusing rank was back: "
                + (failedAt[0] - back.get()) / 1_000_000 + " ms after");
    }
}
