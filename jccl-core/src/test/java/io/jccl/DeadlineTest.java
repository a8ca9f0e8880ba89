package io.jccl;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DeadlineTest {

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldFailBarrierOnEveryPresentRankWhenARankNeverArrives(TransportKind kind, Algorithm algorithm) throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(kind, 3, Duration.ofSeconds(30), algorithm, comm -> {
            if (comm.rank() != 2) {
                // rank 0 waits for rank 2 first and has the short deadline; rank 1 then waits for rank 0
                comm.barrier(CollectiveOptions.DEFAULT
                        .withTimeout(Duration.ofMillis(comm.rank() == 0 ? 300 : 30_000)));
            }
            return null;
        });
        CollectiveTimeoutException t = assertInstanceOf(CollectiveTimeoutException.class, out.get(0).error);
        assertEquals(2, t.peer());
        assertEquals(OpType.BARRIER, t.operation());
        PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, out.get(1).error);
        assertEquals(0, a.originRank());
        assertEquals(null, out.get(2).error);
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldTimeOutAllReduceWhenARankNeverArrives(TransportKind kind, Algorithm algorithm) throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        List<RankHarness.Outcome<Object>> out = RankHarness.run(kind, 3, Duration.ofMinutes(5), algorithm, comm -> {
            if (comm.rank() == 2) {
                release.await(20, TimeUnit.SECONDS);
                return null;
            }
            try {
                // rank 1 has the short deadline; rank 0 would wait 30 s but is told as soon as rank 1 fails. The short
                // one leaves rank 0 a second to arrive: at 300 ms a stalled JVM (once in CI, on JDK 25) had rank 1
                // rightly name rank 0, which had not arrived yet
                comm.allReduce(Tensor.of(new float[10]), ReduceOp.SUM, CollectiveOptions.DEFAULT
                        .withTimeout(Duration.ofMillis(comm.rank() == 1 ? 1_000 : 30_000)));
                return null;
            } finally {
                if (comm.rank() == 0) {
                    release.countDown();
                }
            }
        });
        // rank 1 receives from rank 2 at step 0 and times out; rank 0 waits on rank 1 and is told it failed
        CollectiveTimeoutException t = assertInstanceOf(CollectiveTimeoutException.class, out.get(1).error);
        assertEquals(1, t.rank());
        assertEquals(2, t.peer());
        assertEquals(OpType.ALL_REDUCE, t.operation());
        assertEquals(0, t.sequence());
        assertEquals(0, t.step());
        // before raising it asked the others how far they got: rank 2, which never entered the call, is named
        assertTrue(t.getMessage().startsWith("rank 1: allReduce #0 timed out after 1000 ms: rank 2 never entered "
                + "allReduce #0") && t.getMessage().contains("this rank waited for rank 2 at step 0"), t.getMessage());
        PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, out.get(0).error);
        assertEquals(1, a.originRank());
        assertTrue(a.getMessage().contains("timed out"), a.getMessage());
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldRefuseCallsAfterAFailure(TransportKind kind, Algorithm algorithm) throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(kind, 2, Duration.ofMillis(200), algorithm, comm -> {
            if (comm.rank() == 0) {
                JcclException first = assertThrows(CollectiveTimeoutException.class,
                        () -> comm.allReduce(new float[4], ReduceOp.SUM));
                CommunicatorAbortedException next = assertThrows(CommunicatorAbortedException.class,
                        () -> comm.broadcast(new float[4], 0));
                assertEquals(first, next.getCause());
            }
            return null;
        });
        assertEquals(null, out.get(0).error);
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void shouldTimeOutPointToPointReceive(TransportKind kind, Algorithm algorithm) throws Exception {
        List<RankHarness.Outcome<Object>> out = RankHarness.run(kind, 2, Duration.ofSeconds(30), algorithm, comm -> {
            if (comm.rank() == 1) {
                comm.recv(Tensor.of(new int[3]), 0, 7, CollectiveOptions.DEFAULT.withTimeout(Duration.ofMillis(200)));
            }
            return null;
        });
        CollectiveTimeoutException t = assertInstanceOf(CollectiveTimeoutException.class, out.get(1).error);
        assertEquals(0, t.peer());
    }
}
