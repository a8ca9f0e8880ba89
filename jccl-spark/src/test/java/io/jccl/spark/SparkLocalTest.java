package io.jccl.spark;

import io.jccl.Communicator;
import io.jccl.ReduceOp;
import io.jccl.spark.examples.LogisticRegressionExample;
import io.jccl.spark.examples.LogisticRegressionExample.Fit;
import io.jccl.spark.examples.LogisticRegressionExample.MllibFit;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.Iterator;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Barrier stages on {@code local[4,3]}: four tasks as threads of this JVM, a task may fail 3 times (plain
 * {@code local[4]} fails the job at the first task failure, so no stage retry could be seen).
 */
@Timeout(180)
class SparkLocalTest {
    private static SparkSession spark;
    private static JavaSparkContext sc;
    private static final TaskEnds ENDS = new TaskEnds();

    @BeforeAll
    static void start() {
        spark = SparkTestSessions.start("local[4,3]", "jccl-spark local test");
        sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        sc.sc().addSparkListener(ENDS);
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
    }

    @Test
    void theRankIsThePartitionIdAndAllReduceSumsEveryPartition() {
        JavaRDD<Integer> numbers = sc.parallelize(IntStream.range(0, 1000).boxed().collect(Collectors.toList()), 4);
        List<long[]> out = JcclSpark.run(numbers, (Iterator<Integer> part, Communicator comm) -> {
            long[] sum = {0, 1};
            part.forEachRemaining(i -> sum[0] += i);
            comm.allReduce(sum, ReduceOp.SUM);
            return new long[] {comm.rank(), BarrierTaskContext.get().partitionId(), comm.size(), sum[0], sum[1]};
        });
        assertEquals(4, out.size());
        for (int p = 0; p < 4; p++) {
            assertArrayEquals(new long[] {p, p, 4, 999L * 1000 / 2, 4}, out.get(p));
        }
    }

    @Test
    void gradientDescentInOneBarrierStageFindsMllibsModel() {
        JavaRDD<double[]> data = LogisticRegressionExample.generate(sc, 4, 4000, 6, 7);
        try {
            Fit jccl = LogisticRegressionExample.trainWithJccl(data, LogisticRegressionExample.MAX_ITERATIONS,
                    LogisticRegressionExample.STEP, LogisticRegressionExample.TOLERANCE);
            MllibFit mllib = LogisticRegressionExample.trainWithMllib(spark, data, 100, 1e-9);
            double diff = LogisticRegressionExample.maxAbsDiff(jccl.weights, mllib.weights);
            assertTrue(diff < SparkTestSessions.COEFFICIENT_TOLERANCE, "jccl " + java.util.Arrays.toString(jccl.weights)
                    + " vs MLlib " + java.util.Arrays.toString(mllib.weights) + ": " + diff);
            assertTrue(jccl.iterations < LogisticRegressionExample.MAX_ITERATIONS, "did not converge: "
                    + jccl.iterations);
            // and the model is the generating one, roughly: 16,000 rows
            double[] truth = LogisticRegressionExample.trueWeights(6);
            assertTrue(LogisticRegressionExample.maxAbsDiff(jccl.weights, truth) < 0.15,
                    java.util.Arrays.toString(jccl.weights));
            System.out.print(LogisticRegressionExample.table("local[4]", 16_000, 6, jccl, 0, mllib));
        } finally {
            data.unpersist();
        }
    }

    @Test
    void aTaskThatFailsMakesItsPeersFailAtOnceAndSparkRetriesTheStage() throws InterruptedException {
        JavaRDD<double[]> data = LogisticRegressionExample.generate(sc, 4, 2000, 4, 11);
        try {
            Fit reference = LogisticRegressionExample.trainWithJccl(data, 40, LogisticRegressionExample.STEP, 0);
            ENDS.clear();
            List<Fit> fits = JcclSpark.run(data, (Iterator<double[]> part, Communicator comm) ->
                    SparkTestSessions.descend(part, comm, 40, 5, false));
            Fit retried = fits.get(0);
            assertEquals(1, retried.stageAttempt, "the result should come from the second attempt");
            assertArrayEquals(reference.weights, retried.weights, 1e-12);
            SparkTestSessions.assertPeersFailedFast(ENDS.awaitFailedAttempt(4, 10_000), 3, "IllegalStateException");
        } finally {
            data.unpersist();
        }
    }
}
