package io.jccl;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The byte counters prove the textbook laws exactly when the chunks are equal. */
class TrafficLawTest {

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 4, 5, 8})
    void shouldMoveTwoTimesNMinusOneOverNForRingAllReduce(int n) {
        int count = 1024 * n; // gloo's chunks are equal: 2n segments of 512 floats
        long t = 4L * count;
        List<long[]> bytes = Jccl.runThreads(n, CommunicatorConfig.fromEnvironment().withAlgorithm(Algorithm.RING),
                comm -> {
            comm.allReduce(new float[count], ReduceOp.SUM);
            comm.allGather(Tensor.of(new float[count / n]), Tensor.of(new float[count]));
            comm.reduceScatter(Tensor.of(new float[count]), Tensor.of(new float[count / n]), ReduceOp.SUM);
            return new long[] {comm.counters().bytesSent(OpType.ALL_REDUCE),
                comm.counters().bytesReceived(OpType.ALL_REDUCE), comm.counters().bytesSent(OpType.ALL_GATHER),
                comm.counters().bytesSent(OpType.REDUCE_SCATTER)};
        });
        for (long[] b : bytes) {
            assertEquals(2 * t * (n - 1) / n, b[0]);
            assertEquals(2 * t * (n - 1) / n, b[1]);
            assertEquals(t * (n - 1) / n, b[2]);
            assertEquals(t * (n - 1) / n, b[3]);
        }
    }
}
