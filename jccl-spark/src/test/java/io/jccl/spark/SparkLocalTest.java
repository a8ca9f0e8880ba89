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
            long t0 = System.nanoTime();
            Fit jccl = LogisticRegressionExample.trainWithJccl(data, LogisticRegressionExample.MAX_ITERATIONS,
                    LogisticRegressionExample.STEP, LogisticRegressionExample.TOLERANCE);
            long stage = System.nanoTime() - t0;
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
            System.out.print(LogisticRegressionExample.table("local[4]", 16_000, 6, jccl, stage, mllib));
        } finally {
            data.unpersist();
        }
    }

    /** A result that serializes but cannot be read back, as one of a class the driver lacks. */
    static final class Unreadable implements java.io.Serializable {
        private static final long serialVersionUID = 1L;

        private void readObject(java.io.ObjectInputStream in) throws java.io.IOException {
            throw new java.io.InvalidObjectException("unreadable on purpose");
        }
    }

    /** The driver cannot read one partition's result: the error names the partition (it named none). */
    @Test
    void aResultTheDriverCannotReadIsNamedByItsPartition() {
        JavaRDD<Integer> parts = sc.parallelize(List.of(0, 1, 2, 3), 4);
        RuntimeException e = org.junit.jupiter.api.Assertions.assertThrows(RuntimeException.class,
                () -> JcclSpark.run(parts, (Iterator<Integer> part, Communicator comm) ->
                        comm.rank() == 2 ? new Unreadable() : (java.io.Serializable) Integer.valueOf(comm.rank())));
        assertTrue(e.getMessage().contains("partition 2") && e.getMessage().contains("unreadable on purpose"),
                e.toString());
    }

    /** Set by the tasks of {@link #aCancelledStageEndsTheTasksWaitingInACollective}: they are threads of this JVM. */
    private static final java.util.concurrent.atomic.AtomicLong FORMED = new java.util.concurrent.atomic.AtomicLong();
    private static final java.util.Map<Integer, String> RAISED = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Spark kills the tasks of a cancelled stage without interrupting their threads (the default): tasks blocked
     * in an allReduce for a peer that is busy elsewhere would wait for it. The communicator notices the kill and
     * aborts, so they end at once, with jccl's error naming the kill.
     */
    @Test
    void aCancelledStageEndsTheTasksWaitingInACollective() throws Exception {
        FORMED.set(0);
        RAISED.clear();
        ENDS.clear();
        JavaRDD<Integer> parts = sc.parallelize(List.of(0, 1, 2, 3), 4);
        Thread job = new Thread(() -> {
            sc.setJobGroup("cancel-me", "a stage to cancel", false);
            try {
                JcclSpark.run(parts, (Iterator<Integer> part, Communicator comm) -> {
                    FORMED.incrementAndGet();
                    if (comm.rank() == 3) {
                        Thread.sleep(8_000); // busy, deaf to the kill: the others wait for it in the allReduce
                        return 0;
                    }
                    try {
                        comm.allReduce(new int[] {1});
                    } catch (RuntimeException e) {
                        RAISED.put(comm.rank(), e.toString());
                        throw e;
                    }
                    return 1;
                });
            } catch (RuntimeException expected) {
                // the job is cancelled
            }
        });
        job.start();
        long until = System.currentTimeMillis() + 60_000;
        while (FORMED.get() < 4 && System.currentTimeMillis() < until) {
            Thread.sleep(20);
        }
        assertEquals(4, FORMED.get(), "the communicators were not formed");
        Thread.sleep(300);
        long cancelled = System.currentTimeMillis();
        sc.cancelJobGroup("cancel-me");
        while (RAISED.size() < 3 && System.currentTimeMillis() < cancelled + 5_000) {
            Thread.sleep(20);
        }
        long waited = System.currentTimeMillis() - cancelled;
        assertEquals(3, RAISED.size(), "the tasks waiting in allReduce did not end within 5 s of the cancel: "
                + RAISED);
        for (String e : RAISED.values()) {
            assertTrue(e.startsWith("io.jccl.") && e.contains("Spark killed partition"), e);
        }
        System.out.println("tasks waiting in allReduce ended " + waited + " ms after the cancel: " + RAISED);
        job.join(30_000); // the busy task ends after its sleep
    }

    @Test
    void aTaskThatFailsMakesItsPeersFailAtOnceAndSparkRetriesTheStage() throws Exception {
        JavaRDD<double[]> data = LogisticRegressionExample.generate(sc, 4, 2000, 4, 11);
        try {
            Fit reference = LogisticRegressionExample.trainWithJccl(data, 40, LogisticRegressionExample.STEP, 0);
            ENDS.clear();
            java.nio.file.Path record = java.nio.file.Files.createTempDirectory(
                    java.nio.file.Path.of("target"), "task-failure");
            String dir = record.toAbsolutePath().toString();
            List<Fit> fits = JcclSpark.run(data, (Iterator<double[]> part, Communicator comm) ->
                    SparkTestSessions.descend(part, comm, 40, 5, false, dir));
            Fit retried = fits.get(0);
            assertEquals(1, retried.stageAttempt, "the result should come from the second attempt");
            assertArrayEquals(reference.weights, retried.weights, 1e-12);
            // Spark's events: the failed task and, within 10 s, the end of its 3 peers (Spark reports a peer it had
            // asked to kill as killed, whatever it raised)
            SparkTestSessions.assertPeersFailedFast(ENDS.awaitFailedAttempt(4, 10_000), 3, "IllegalStateException",
                    false);
            // what each peer raised: jccl's error naming the failed partition and its cause, within 10 s
            long failed = Long.parseLong(java.nio.file.Files.readString(record.resolve("failed")).trim());
            for (int p = 0; p < 3; p++) {
                String[] peer = java.nio.file.Files.readString(record.resolve("peer-" + p)).split(" ", 2);
                assertTrue(peer[1].startsWith("io.jccl.PeerAbortedException") && peer[1].contains("partition 3 of")
                        && peer[1].contains("fails at iteration 5"), "partition " + p + " raised " + peer[1]);
                long after = Long.parseLong(peer[0]) - failed;
                assertTrue(after < 10_000, "partition " + p + " failed " + after + " ms after partition 3");
            }
        } finally {
            data.unpersist();
        }
    }
}
