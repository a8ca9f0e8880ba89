package io.jccl;

import io.jccl.instrument.Counter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Locally wrong arguments are rejected before any data is sent; refused on every rank alike, they leave the
 * communicator usable (one rank's refusal fails its peers: {@link RefusalTest}).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ArgumentValidationTest {

    private static void rejects(Executable call, String... fragments) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), () -> "'" + e.getMessage() + "' lacks '" + f + "'");
        }
    }

    /**
     * A timeout too long for the clock ("forever") threw "long overflow" after the call had taken its sequence number,
     * and every later call of the communicator waited for that one forever. It is now taken as
     * {@link JcclSettings#MAX_TIMEOUT}, on a call, a config and a monitored barrier alike.
     */
    @Test
    void aTimeoutOfForeverIsTakenAsTheLongestAndTheNextCallsRun() {
        Duration forever = java.time.temporal.ChronoUnit.FOREVER.getDuration();
        assertEquals(JcclSettings.MAX_TIMEOUT, CommunicatorConfig.fromEnvironment().withTimeout(forever).timeout());
        List<float[]> out = Jccl.runThreads(2, CommunicatorConfig.fromEnvironment().withTimeout(forever), comm -> {
            float[] x = {comm.rank() + 1};
            comm.allReduce(Tensor.of(x), ReduceOp.SUM, CollectiveOptions.DEFAULT.withTimeout(forever));
            comm.allReduce(x, ReduceOp.SUM);
            comm.allReduceAsync(Tensor.of(x), ReduceOp.SUM, CollectiveOptions.DEFAULT.withTimeout(
                    Duration.ofSeconds(Long.MAX_VALUE))).await();
            comm.monitoredBarrier(forever);
            comm.barrier();
            return x;
        });
        assertArrayEquals(new float[] {12}, out.get(0));
        assertArrayEquals(new float[] {12}, out.get(1));
    }

    /**
     * allocate beyond what a buffer holds: an IllegalArgumentException on TCP too (an ArithmeticException before), as
     * over shm. (Ranks that are threads allocate an array, which may hold it.)
     */
    @Test
    void allocateBeyondABuffersReachSaysSoOnEveryTransport() throws Exception {
        for (TransportKind kind : new TransportKind[] {TransportKind.TCP, TransportKind.SHM}) {
            List<RankHarness.Outcome<String>> out = RankHarness.run(kind, 2, Duration.ofSeconds(20), comm ->
                    assertThrows(IllegalArgumentException.class, () -> comm.allocate(DataType.FLOAT64, 300_000_000))
                            .getMessage());
            for (RankHarness.Outcome<String> o : out) {
                assertNull(o.error, kind + ": " + o.error);
            }
        }
    }

    @Test
    void shouldRejectBadArgumentsWithoutCommunicating() throws Exception {
        List<RankHarness.Outcome<float[]>> out = RankHarness.run(3, Duration.ofSeconds(20), comm -> {
            rejects(() -> comm.allReduce((Tensor) null, ReduceOp.SUM), "rank " + comm.rank() + ": allReduce",
                    "tensor is null");
            rejects(() -> comm.allReduce(Tensor.of(new float[3]), ReduceOp.BXOR), "BXOR", "FLOAT32", "integer");
            rejects(() -> comm.allReduce(Tensor.of(new float[3]), null), "reduce op is null");
            rejects(() -> comm.broadcast(new float[3], 3), "root must be in [0, 3), got 3");
            rejects(() -> comm.broadcast(new float[3], -1), "root must be in [0, 3), got -1");
            rejects(() -> comm.allGather(Tensor.of(new float[2]), Tensor.of(new float[5])),
                    "rank " + comm.rank() + ": allGather: output must hold 6 elements", "got 5");
            rejects(() -> comm.allGather(Tensor.of(new float[2]), Tensor.of(new double[6])), "dtypes differ");
            rejects(() -> comm.reduceScatter(Tensor.of(new float[7]), Tensor.of(new float[2]), ReduceOp.SUM),
                    "multiple of the world size (3)", "got 7");
            rejects(() -> comm.reduceScatter(Tensor.of(new float[9]), Tensor.of(new float[2]), ReduceOp.SUM),
                    "output must hold 3 elements");
            rejects(() -> comm.allToAll(Tensor.of(new float[4]), Tensor.of(new float[4])), "multiple of the world");
            rejects(() -> comm.allReduce(Tensor.of(new float[3]), ReduceOp.SUM,
                    CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.DIRECT)), "allReduce has no DIRECT algorithm");
            rejects(() -> comm.send(Tensor.of(new float[1]), comm.rank(), 0), "dst must be another rank");
            rejects(() -> Tensor.ofArray(DataType.FLOAT32, new int[3], 0, 3), "needs a float[]");
            rejects(() -> Tensor.of(new float[3], 2, 2), "out of bounds");
            rejects(() -> comm.gather(Tensor.of(new float[1]), null, comm.rank()), "output on the root is null");
            for (OpType op : OpType.values()) {
                assertEquals(0, comm.counters().get(op, Counter.MESSAGES_SENT), op.label());
            }
            // every rank refused every call: the next real collective still lines up on every rank
            float[] x = {comm.rank(), 1};
            comm.allReduce(x, ReduceOp.SUM);
            return x;
        });
        for (RankHarness.Outcome<float[]> o : out) {
            assertNull(o.error);
            assertArrayEquals(new float[] {3, 3}, o.value);
        }
    }
}
