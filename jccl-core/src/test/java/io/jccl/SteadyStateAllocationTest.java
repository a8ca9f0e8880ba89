package io.jccl;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 16's lean path: a small collective call over shared memory (threads or shm), made again and again on the
 * same arrays (the same tensors, or new tensors over them), allocates nothing once warm: no prepared call, signature, call object, header, staging window or
 * argument message per call. Each rank counts the bytes its own thread allocated over a run of calls
 * ({@code com.sun.management.ThreadMXBean}); a call that made even one 16-byte object would put the average at 16
 * or more. The bound, 4 bytes per call, leaves room for the rare wait long enough to look for aborts and answer
 * progress requests (which may allocate) on a busy machine. Not a timing: bytes allocated do not depend on speed.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SteadyStateAllocationTest {
    private static final int WARM_UP = 30_000;
    private static final int MEASURED = 5_000;
    private static final double BOUND_BYTES_PER_CALL = 4;

    private static final CollectiveOptions SHARED = CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.SHARED_MEMORY);

    @ParameterizedTest
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM"})
    void smallCallsAllocateNothingOnceWarm(TransportKind kind) throws Exception {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assertTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled(),
                "this JVM does not count allocated bytes per thread");
        List<RankHarness.Outcome<String>> out = RankHarness.run(kind, 2, Duration.ofSeconds(60), c -> {
            float[] oneArray = {c.rank() + 1};
            float[] twoArray = new float[2];
            float[] pairArray = {1, 2};
            // every other call a second tensor over the same array, as a program that wraps its arrays per call has
            Tensor[] one = {Tensor.of(oneArray), Tensor.of(oneArray)};
            Tensor[] two = {Tensor.of(twoArray), Tensor.of(twoArray)};
            Tensor[] pair = {Tensor.of(pairArray), Tensor.of(pairArray)};
            StringBuilder report = new StringBuilder();
            for (String op : new String[] {"allreduce", "broadcast", "allgather", "reducescatter", "reduce",
                    "barrier"}) {
                for (int i = 0; i < WARM_UP; i++) {
                    call(c, op, one[i & 1], two[i & 1], pair[i & 1]);
                }
                long before = threads.getCurrentThreadAllocatedBytes();
                for (int i = 0; i < MEASURED; i++) {
                    call(c, op, one[i & 1], two[i & 1], pair[i & 1]);
                }
                double perCall = (threads.getCurrentThreadAllocatedBytes() - before) / (double) MEASURED;
                if (perCall > BOUND_BYTES_PER_CALL) {
                    report.append(String.format("rank %d, %s: %.1f B per call; ", c.rank(), op, perCall));
                }
            }
            return report.length() == 0 ? null : report.toString();
        });
        for (RankHarness.Outcome<String> o : out) {
            assertNull(o.error, () -> "a rank failed: " + o.error);
            assertNull(o.value, () -> kind + ": allocation per call above " + BOUND_BYTES_PER_CALL + " B: "
                    + o.value);
        }
    }

    private static void call(Communicator c, String op, Tensor one, Tensor two, Tensor pair) {
        switch (op) {
            case "allreduce":
                c.allReduce(one, ReduceOp.SUM, SHARED);
                break;
            case "broadcast":
                c.broadcast(one, 0, SHARED);
                break;
            case "allgather":
                c.allGather(one, two, SHARED);
                break;
            case "reducescatter":
                c.reduceScatter(pair, one, ReduceOp.SUM, SHARED);
                break;
            case "reduce":
                c.reduce(one, 0, ReduceOp.SUM, SHARED);
                break;
            default:
                c.barrier(SHARED);
        }
    }
}
