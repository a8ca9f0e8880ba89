package io.jccl.spark;

import io.jccl.Communicator;
import io.jccl.spark.examples.LogisticRegressionExample;
import io.jccl.spark.examples.LogisticRegressionExample.Fit;
import io.jccl.spark.examples.LogisticRegressionExample.MllibFit;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Barrier stages on {@code local-cluster[2,1,1024]}: a standalone master and two workers in this JVM, each worker
 * starting an executor JVM of its own (one core, 1 GiB), with nothing but the Maven jars: the executors get this
 * JVM's class path ({@code spark.testing}), which needs no {@code SPARK_HOME}.
 */
@Timeout(240)
class SparkClusterTest {
    private static SparkSession spark;
    private static JavaSparkContext sc;
    private static final TaskEnds ENDS = new TaskEnds();

    @BeforeAll
    static void start() {
        spark = SparkTestSessions.start(SparkTestSessions.LOCAL_CLUSTER, "jccl-spark local-cluster test");
        sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        sc.sc().addSparkListener(ENDS);
        SparkTestSessions.awaitExecutors(sc, 2);
    }

    @AfterAll
    static void stop() {
        if (spark != null) {
            spark.stop();
        }
        SparkTestSessions.stopped();
    }

    @Test
    void executorsInSeparateJvmsTrainMllibsModel() {
        JavaRDD<double[]> data = LogisticRegressionExample.generate(sc, 2, 4000, 6, 5);
        try {
            // the two tasks run in two processes
            List<String> pids = JcclSpark.run(data, (Iterator<double[]> part, Communicator comm) ->
                    ProcessHandle.current().pid() + "");
            Set<String> distinct = new HashSet<>(pids);
            assertEquals(2, distinct.size(), "tasks ran in " + pids + " (the test JVM is "
                    + ProcessHandle.current().pid() + ")");
            assertTrue(!distinct.contains(Long.toString(ProcessHandle.current().pid())));
            long t0 = System.nanoTime();
            Fit jccl = LogisticRegressionExample.trainWithJccl(data, LogisticRegressionExample.MAX_ITERATIONS,
                    LogisticRegressionExample.STEP, LogisticRegressionExample.TOLERANCE);
            long stage = System.nanoTime() - t0;
            MllibFit mllib = LogisticRegressionExample.trainWithMllib(spark, data, 100, 1e-9);
            double diff = LogisticRegressionExample.maxAbsDiff(jccl.weights, mllib.weights);
            assertTrue(diff < SparkTestSessions.COEFFICIENT_TOLERANCE, "jccl " + java.util.Arrays.toString(jccl.weights)
                    + " vs MLlib " + java.util.Arrays.toString(mllib.weights) + ": " + diff);
            System.out.print(LogisticRegressionExample.table(SparkTestSessions.LOCAL_CLUSTER, 8000, 6, jccl, stage,
                    mllib));
        } finally {
            data.unpersist();
        }
    }

    @Test
    void anExecutorKilledMidStageMakesItsPeerFailAtOnceAndSparkRetriesTheStage() throws Exception {
        JavaRDD<double[]> data = LogisticRegressionExample.generate(sc, 2, 2000, 4, 13);
        try {
            Fit reference = LogisticRegressionExample.trainWithJccl(data, 30, LogisticRegressionExample.STEP, 0);
            ENDS.clear();
            java.nio.file.Path record = java.nio.file.Files.createTempDirectory(
                    java.nio.file.Path.of("target"), "executor-kill");
            String dir = record.toAbsolutePath().toString();
            List<Fit> fits = JcclSpark.run(data, (Iterator<double[]> part, Communicator comm) ->
                    SparkTestSessions.descend(part, comm, 30, 5, true, dir));
            Fit retried = fits.get(0);
            assertEquals(1, retried.stageAttempt, "the result should come from the second attempt");
            assertArrayEquals(reference.weights, retried.weights, 1e-12);
            SparkTestSessions.assertPeersFailedFast(ENDS.awaitFailedAttempt(2, 20_000), 1, "xecutor", false);
            // what the survivor, in the other executor JVM, raised: jccl's error, within seconds of the halt
            long halted = Long.parseLong(java.nio.file.Files.readString(record.resolve("failed")).trim());
            String[] peer = java.nio.file.Files.readString(record.resolve("peer-0")).split(" ", 2);
            assertTrue(peer[1].startsWith("io.jccl."), "the survivor raised " + peer[1]);
            long after = Long.parseLong(peer[0]) - halted;
            assertTrue(after < 10_000, "the survivor failed " + after + " ms after the halt: " + peer[1]);
            System.out.println("survivor of the halted executor, " + after + " ms after the halt: " + peer[1]);
        } finally {
            data.unpersist();
        }
    }
}
