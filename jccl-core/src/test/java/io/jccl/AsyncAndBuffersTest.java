package io.jccl;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AsyncAndBuffersTest {

    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void shouldRunAsyncAndSyncCallsInCallOrder(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<List<float[]>>> out = RankHarness.run(kind, 4, Duration.ofSeconds(20), comm -> {
            List<float[]> bufs = new ArrayList<>();
            List<Work> works = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                float[] b = new float[1000 + i];
                java.util.Arrays.fill(b, comm.rank() + i);
                bufs.add(b);
                works.add(comm.allReduceAsync(Tensor.of(b), ReduceOp.SUM));
                if (i % 5 == 0) {
                    float[] s = {1};
                    comm.allReduce(s, ReduceOp.SUM); // synchronous, between asynchronous calls
                    assertEquals(4f, s[0]);
                }
            }
            for (Work w : works) {
                w.await();
            }
            return bufs;
        });
        for (RankHarness.Outcome<List<float[]>> o : out) {
            assertNull(o.error);
            for (int i = 0; i < 20; i++) {
                float expected = 6 + 4 * i;
                for (float v : o.value.get(i)) {
                    assertEquals(expected, v);
                }
            }
        }
    }

    /**
     * An action chained to an asynchronous call's future that makes a jccl call itself (a recv in an irecv's
     * callback, an allreduce after an asynchronous one) ran on the communicator's one thread for such calls and waited
     * for itself forever. They now complete on threads of their own.
     */
    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void actionsChainedToAnAsynchronousCallMayMakeCallsOfTheirOwn(TransportKind kind) throws Exception {
        // rank 1 sends once rank 0's irecv is posted and its action chained: the irecv then completes later, and its
        // action runs on a completion thread of jccl's ("jccl-work-completion"), never on the thread that delivered
        // the message (were it complete already, the action would run at once on rank 0's own thread, and the case
        // would not be exercised)
        java.util.concurrent.CountDownLatch chained = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicReference<String> actionThread = new java.util.concurrent.atomic.AtomicReference<>();
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(kind, 2, Duration.ofSeconds(20), comm -> {
            float[] got = new float[4];
            if (comm.rank() == 1) {
                assertTrue(chained.await(15, TimeUnit.SECONDS), "rank 0 never chained its action");
                comm.send(Tensor.of(new float[] {1}), 0, 0);
                comm.send(Tensor.of(new float[] {2}), 0, 0);
            } else {
                float[] a = new float[1];
                float[] b = new float[1];
                java.util.concurrent.CompletableFuture<Void> f;
                try {
                    f = comm.irecv(Tensor.of(a), 1, 0).toCompletableFuture()
                            .thenRun(() -> {
                                actionThread.set(Thread.currentThread().getName());
                                comm.recv(Tensor.of(b), 1, 0);
                            });
                } finally {
                    chained.countDown();
                }
                f.get(15, TimeUnit.SECONDS);
                got[0] = a[0];
                got[1] = b[0];
            }
            float[] x = {comm.rank() + 1};
            float[] y = {10 * (comm.rank() + 1)};
            comm.allReduceAsync(Tensor.of(x), ReduceOp.SUM).toCompletableFuture()
                    .thenRun(() -> comm.allReduce(y, ReduceOp.SUM)).get(15, TimeUnit.SECONDS);
            got[2] = x[0];
            got[3] = y[0];
            return got;
        });
        for (RankHarness.Outcome<float[]> o : out) {
            assertNull(o.error);
        }
        assertArrayEquals(new float[] {1, 2, 3, 30}, out.get(0).value);
        // Work's contract: the chained action ran on a completion thread of jccl's, not the communicator's own
        assertEquals("jccl-work-completion", actionThread.get());
        assertArrayEquals(new float[] {0, 0, 3, 30}, out.get(1).value);
    }

    /**
     * A shared-memory send larger than the ring towards its receiver waits for the receiver to take the first part;
     * it waited forever where the receiver waited for something else first (here a latch the sender releases after
     * its send). It now fails at the call's deadline naming the receiver, as a receive does; an isend, on a thread
     * of its own, lets the sender go on and completes once the receiver receives.
     */
    @org.junit.jupiter.api.Test
    void aSendThatOutgrowsTheRingWaitsForItsReceiverOnlyUntilTheDeadline() throws Exception {
        float[] big = new float[256 << 10]; // 1 MiB, the test's rings hold 64 KiB
        String m = whileRankOneIsBusyElsewhere(comm -> comm.send(Tensor.of(big), 1, 0));
        assertTrue(m.contains("to rank 1, which has not received them"), m);
        java.util.concurrent.CountDownLatch released = new java.util.concurrent.CountDownLatch(1);
        List<RankHarness.Outcome<float[]>> async = RankHarness.run(TransportKind.SHM, 2, Duration.ofSeconds(20),
                comm -> {
                    float[] got = new float[big.length];
                    if (comm.rank() == 0) {
                        java.util.Arrays.fill(got, 7);
                        Work w = comm.isend(Tensor.of(got), 1, 0);
                        released.countDown(); // the caller goes on while the send waits for room
                        w.await();
                    } else {
                        released.await();
                        comm.recv(Tensor.of(got), 0, 0);
                    }
                    return got;
                });
        assertNull(async.get(0).error);
        assertNull(async.get(1).error);
        assertEquals(7f, async.get(1).value[big.length - 1]);
    }

    /**
     * The same in a collective: its send to a rank busy outside jccl times out, and the timeout's report then asked
     * every rank how far it got through the same full ring, with no deadline: the call waited forever after all. Now
     * the question gives up too and the call fails at about its deadline, naming the rank.
     */
    @org.junit.jupiter.api.Test
    void aCollectiveWhoseSendOutgrowsTheRingFailsAtItsDeadline() throws Exception {
        String m = whileRankOneIsBusyElsewhere(comm -> comm.allToAll(Tensor.of(new float[2 * (128 << 10)]),
                Tensor.of(new float[2 * (128 << 10)]), CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.PAIRWISE)));
        assertTrue(m.contains("rank 1"), m);
    }

    /** A call of rank 0 to rank 1, itself busy outside jccl (a latch the call releases when it ends): its timeout. */
    private static String whileRankOneIsBusyElsewhere(java.util.function.Consumer<Communicator> call)
            throws Exception {
        java.util.concurrent.CountDownLatch latch = new java.util.concurrent.CountDownLatch(1);
        long start = System.nanoTime();
        List<RankHarness.Outcome<String>> out = RankHarness.run(TransportKind.SHM, 2, Duration.ofSeconds(2), comm -> {
            if (comm.rank() == 0) {
                try {
                    call.accept(comm);
                    return "no timeout";
                } catch (CollectiveTimeoutException e) {
                    return e.getMessage();
                } finally {
                    latch.countDown();
                }
            }
            latch.await();
            return "waited";
        });
        assertTrue(System.nanoTime() - start < 20_000_000_000L, "not at the deadline");
        return String.valueOf(out.get(0).value);
    }

    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void shouldRethrowAsyncFailureFromAwait(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(kind, 2, Duration.ofMillis(200), comm -> {
            if (comm.rank() == 0) {
                Work w = comm.allReduceAsync(Tensor.of(new float[3]), ReduceOp.SUM);
                assertInstanceOf(CollectiveTimeoutException.class, assertThrows(JcclException.class, w::await));
            }
            return null;
        });
        assertNull(out.get(0).error);
    }

    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void shouldReduceDirectByteBuffersInPlace(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<double[]>> out = RankHarness.run(kind, 3, Duration.ofSeconds(20), comm -> {
            ByteBuffer b = ByteBuffer.allocateDirect(8 * 5).order(ByteOrder.nativeOrder());
            for (int i = 0; i < 5; i++) {
                b.putDouble(i * 8, comm.rank() * 10 + i);
            }
            comm.allReduce(Tensor.of(b, DataType.FLOAT64), ReduceOp.MAX);
            double[] r = new double[5];
            b.asDoubleBuffer().get(r);
            return r;
        });
        for (RankHarness.Outcome<double[]> o : out) {
            assertNull(o.error);
            assertArrayEquals(new double[] {20, 21, 22, 23, 24}, o.value);
        }
    }

    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void shouldSendAndReceiveInOrder(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<int[]>> out = RankHarness.run(kind, 2, Duration.ofSeconds(20), comm -> {
            int[] got = new int[6];
            if (comm.rank() == 0) {
                comm.send(Tensor.of(new int[] {1, 2, 3}), 1, 9);
                comm.send(Tensor.of(new int[] {4, 5, 6}), 1, 9);
            } else {
                Tensor a = Tensor.ofArray(DataType.INT32, got, 0, 3);
                Tensor b = Tensor.ofArray(DataType.INT32, got, 3, 3);
                comm.recv(a, 0, 9);
                comm.recv(b, 0, 9);
            }
            return got;
        });
        assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6}, out.get(1).value);
    }

    /**
     * A receive from rank 1 while an irecv from rank 2 is pending, and rank 2 waits for what rank 0 sends after that
     * receive: torch runs it; here the receive queued behind the irecv on the one receiving thread and every rank
     * waited until the timeout. Operations with different peers now run side by side.
     */
    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void aReceiveFromOnePeerDoesNotWaitForAPendingIrecvFromAnother(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<int[]>> out = RankHarness.run(kind, 3, Duration.ofSeconds(5), c -> {
            int[] a = new int[1];
            int[] b = new int[1];
            if (c.rank() == 0) {
                Work fromTwo = c.irecv(Tensor.of(a), 2, 0);
                c.recv(Tensor.of(b), 1, 0); // rank 1 has sent
                c.send(Tensor.of(new int[] {5}), 2, 0);
                fromTwo.await();
                Work fromOne = c.irecv(Tensor.of(b), 1, 1); // and the same with two irecvs, awaited the other way
                Work fromTwoAgain = c.irecv(Tensor.of(a), 2, 1);
                fromOne.await();
                c.send(Tensor.of(new int[] {7}), 2, 1);
                fromTwoAgain.await();
                return new int[] {a[0], b[0]};
            } else if (c.rank() == 1) {
                c.send(Tensor.of(new int[] {1}), 0, 0);
                c.send(Tensor.of(new int[] {3}), 0, 1);
            } else {
                c.recv(Tensor.of(a), 0, 0);
                c.send(Tensor.of(new int[] {a[0] + 1}), 0, 0);
                c.recv(Tensor.of(a), 0, 1);
                c.send(Tensor.of(new int[] {a[0] + 1}), 0, 1);
            }
            return null;
        });
        for (RankHarness.Outcome<int[]> o : out) {
            assertNull(o.error, () -> String.valueOf(o.error));
        }
        assertArrayEquals(new int[] {8, 3}, out.get(0).value);
    }

    /**
     * A batch with a bad operation after a good one: the good one was started and took its peer's next message
     * unseen, and the caller's next receive waited for a message that never came. Now nothing starts.
     */
    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL"})
    void aBatchWithABadOperationStartsNone(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<int[]>> out = RankHarness.run(kind, 2, Duration.ofSeconds(5), c -> {
            if (c.rank() == 1) {
                c.send(Tensor.of(new int[] {42}), 0, 0);
                return null;
            }
            int[] a = {-1};
            int[] got = {-1};
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.batchIsendIrecv(
                    List.of(P2POp.irecv(Tensor.of(a), 1, 0), P2POp.isend(Tensor.of(new int[1]), 0, 0))));
            assertTrue(e.getMessage().contains("nothing of the batch was started"), e.getMessage());
            c.recv(Tensor.of(got), 1, 0);
            return new int[] {a[0], got[0]};
        });
        assertNull(out.get(0).error, () -> String.valueOf(out.get(0).error));
        assertArrayEquals(new int[] {-1, 42}, out.get(0).value);
    }

    /** Over every transport: a rank that aborts fails every other rank's call, naming it and its reason. */
    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void shouldFailEveryRankWhenOneAborts(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(kind, 4, Duration.ofSeconds(30), comm -> {
            if (comm.rank() == 1) {
                comm.abort("boom on rank 1");
                return null;
            }
            comm.allReduce(new float[16], ReduceOp.SUM);
            return null;
        });
        for (int r : new int[] {0, 2, 3}) {
            PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, out.get(r).error);
            assertEquals(1, a.originRank());
            assertTrue(a.reason().contains("boom on rank 1"), a.getMessage());
        }
    }

    /** runThreads (ranks as threads of this JVM, over the queue mesh). */
    @org.junit.jupiter.api.Test
    void shouldPropagateTheFirstFailureOfRunThreads() {
        JcclException e = assertThrows(JcclException.class, () -> Jccl.runThreads(4,
                CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(30)), comm -> {
                    if (comm.rank() == 1) {
                        throw new IllegalStateException("boom on rank 1");
                    }
                    comm.allReduce(new float[16], ReduceOp.SUM);
                    return null;
                }));
        assertEquals(1, e.rank());
        assertInstanceOf(IllegalStateException.class, e.getCause());
        assertEquals(3, e.getSuppressed().length);
        for (Throwable s : e.getSuppressed()) {
            PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, s);
            assertEquals(1, a.originRank());
            assertTrue(a.reason().contains("boom on rank 1"));
        }
    }

    /**
     * Sends and receives of several threads with one peer, synchronous and asynchronous mixed: each took its number
     * before, and outside, the lock that queued it, so a later number could go out first and the receiver failed a
     * correct program with a mismatch in the sequence. Numbers are now taken where the order is decided.
     */
    @org.junit.jupiter.api.Test
    void pointToPointFromSeveralThreadsKeepsItsNumbersInOrder() {
        int threads = 4;
        int each = 300;
        List<long[]> sums = Jccl.runThreads(2, comm -> {
            long[] sum = new long[1];
            List<Thread> ts = new ArrayList<>();
            List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
            for (int t = 0; t < threads; t++) {
                int id = t;
                Thread th = new Thread(() -> {
                    try {
                        for (int k = 0; k < each; k++) {
                            int[] v = {id * each + k};
                            if (comm.rank() == 0) {
                                if (k % 2 == 0) {
                                    comm.send(Tensor.of(v), 1, 0);
                                } else {
                                    comm.isend(Tensor.of(v), 1, 0).await();
                                }
                            } else {
                                if (k % 3 == 0) {
                                    comm.irecv(Tensor.of(v), 0, 0).await();
                                } else {
                                    comm.recv(Tensor.of(v), 0, 0);
                                }
                                synchronized (sum) {
                                    sum[0] += v[0];
                                }
                            }
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                });
                ts.add(th);
                th.start();
            }
            for (Thread th : ts) {
                th.join();
            }
            if (!failures.isEmpty()) {
                throw new AssertionError("rank " + comm.rank() + ": " + failures.get(0), failures.get(0));
            }
            return sum;
        });
        long n = (long) threads * each;
        assertEquals(n * (n - 1) / 2, sums.get(1)[0], "every value sent arrived once");
    }
}
