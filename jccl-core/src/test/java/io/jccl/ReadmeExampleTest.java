package io.jccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The README's example, as written there, with its result checked. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReadmeExampleTest {

    @Test
    void shouldRunTheReadmeExample() {
        List<float[]> results = Jccl.runThreads(4, comm -> {
            float[] grad = new float[1 << 20];
            java.util.Arrays.fill(grad, comm.rank());
            comm.allReduce(grad, ReduceOp.AVG);                       // in place, every rank gets the mean

            float[] shard = new float[grad.length / comm.size()];     // ZeRO: each rank keeps its shard of the sum
            comm.reduceScatter(Tensor.of(grad), Tensor.of(shard), ReduceOp.SUM);

            Work w = comm.allGatherAsync(Tensor.of(shard), Tensor.of(grad));   // overlap with compute...
            w.await();
            return grad;
        });
        for (float[] g : results) {
            assertEquals(1 << 20, g.length);
            assertEquals(6.0f, g[0]);          // mean 1.5, summed over 4 ranks
            assertEquals(6.0f, g[g.length - 1]);
        }
    }
}
