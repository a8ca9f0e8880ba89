package io.jccl.spark;

import io.jccl.Communicator;
import io.jccl.spark.examples.LogisticRegressionExample;
import io.jccl.spark.examples.LogisticRegressionExample.Fit;
import org.apache.spark.sql.SparkSession;

import java.util.Iterator;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the Spark tests share: the session, the tolerance, the failure checks. */
final class SparkTestSessions {
    /**
     * Gradient descent stops at a gradient norm of 1e-7 and MLlib's L-BFGS at a relative change of 1e-9: both are at
     * the same optimum of a strictly convex loss to far better than this.
     */
    static final double COEFFICIENT_TOLERANCE = 1e-4;

    private SparkTestSessions() {
    }

    /** Two workers of one core and 1 GiB each, each with an executor JVM of its own. */
    static final String LOCAL_CLUSTER = "local-cluster[2,1,1024]";

    /**
     * A session on {@code master}. For {@code local-cluster} the executors need this JVM's class path and no
     * {@code SPARK_HOME}: Spark's test mode ({@code spark.testing}, read by the driver, and {@code SPARK_TESTING}
     * and {@code SPARK_SCALA_VERSION}, read by the launcher that builds each executor's command) gives exactly that.
     */
    static SparkSession start(String master, String name) {
        SparkSession.Builder b = SparkSession.builder();
        if (master.startsWith("local-cluster")) {
            System.setProperty("spark.testing", "true");
            // the workers' "Spark home": an empty directory (in test mode the executors' class path is this JVM's)
            java.io.File home = new java.io.File("target/spark-test-home");
            if (!home.isDirectory() && !home.mkdirs()) {
                throw new IllegalStateException("cannot create " + home.getAbsolutePath());
            }
            System.setProperty("spark.test.home", home.getAbsolutePath());
            b = b.config("spark.executorEnv.SPARK_TESTING", "1")
                    .config("spark.executorEnv.SPARK_SCALA_VERSION", "2.13");
        }
        return b.master(master).appName(name)
                .config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", "4")
                .getOrCreate();
    }

    /**
     * Waits until {@code n} executors have registered: a barrier stage submitted before then fails Spark's slot check
     * and is tried again only 15 s later.
     */
    static void awaitExecutors(org.apache.spark.api.java.JavaSparkContext sc, int n) {
        long until = System.currentTimeMillis() + 120_000;
        // the driver is listed too
        while (sc.sc().statusTracker().getExecutorInfos().length < n + 1) {
            if (System.currentTimeMillis() > until) {
                throw new IllegalStateException("only " + (sc.sc().statusTracker().getExecutorInfos().length - 1)
                        + " of " + n + " executors registered within 120 s");
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    /** After a local-cluster session: the other tests run outside Spark's test mode. */
    static void stopped() {
        System.clearProperty("spark.testing");
        System.clearProperty("spark.test.home");
    }

    /** The example's task body, failing in attempt 0 at iteration {@code failAt} on the last partition. */
    static Fit descend(Iterator<double[]> part, Communicator comm, int iterations, int failAt, boolean halt) {
        return descend(part, comm, iterations, failAt, halt, null);
    }

    /**
     * As above; with {@code record} (a directory every task can write: one host), the failing task writes the time
     * it fails at into {@code record/failed}, and every task of attempt 0 that then fails the time and its
     * exception into {@code record/peer-RANK}: in a JVM that Spark's events do not describe (an executor).
     */
    static Fit descend(Iterator<double[]> part, Communicator comm, int iterations, int failAt, boolean halt,
                       String record) {
        int attempt = org.apache.spark.BarrierTaskContext.get().stageAttemptNumber();
        try {
            return LogisticRegressionExample.descend(part, comm, iterations, LogisticRegressionExample.STEP, 0,
                    (it, c) -> {
                        if (it == failAt && attempt == 0 && c.rank() == c.size() - 1) {
                            write(record, "failed", Long.toString(System.currentTimeMillis()));
                            if (halt) {
                                Runtime.getRuntime().halt(42); // the executor's JVM dies: no goodbye, no abort
                            }
                            throw new IllegalStateException("partition " + c.rank() + " fails at iteration " + it
                                    + " of stage attempt " + attempt + " (test)");
                        }
                    });
        } catch (RuntimeException e) {
            if (attempt == 0 && comm.rank() != comm.size() - 1) {
                write(record, "peer-" + comm.rank(), System.currentTimeMillis() + " " + e);
            }
            throw e;
        }
    }

    private static void write(String dir, String name, String text) {
        if (dir == null) {
            return;
        }
        try {
            java.nio.file.Files.writeString(java.nio.file.Path.of(dir, name), text);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * Attempt 0 of the stage: the task of the last partition failed ({@code cause} in its reason), and each of the
     * {@code peers} others ended within 10 s of it (not after jccl's 30-minute collective timeout or Spark's
     * 365-day barrier timeout), with a jccl exception as their reason if {@code requireJcclReason} (Spark reports
     * a task it had asked to kill as killed, whatever it threw). {@code attempt0} must hold all {@code peers + 1}
     * tasks of the attempt, one per partition.
     */
    static void assertPeersFailedFast(List<TaskEnds.End> attempt0, int peers, String cause,
                                      boolean requireJcclReason) {
        // every task of the attempt ended (awaitFailedAttempt returns what it has when it times out): one per
        // partition, else the checks below would pass having seen no peer
        assertEquals(peers + 1, attempt0.size(), "not every task of attempt 0 ended (" + (peers + 1)
                + " expected): " + attempt0);
        java.util.Set<Integer> partitions = new java.util.TreeSet<>();
        java.util.Set<Integer> expected = new java.util.TreeSet<>();
        for (int p = 0; p <= peers; p++) {
            expected.add(p);
        }
        for (TaskEnds.End e : attempt0) {
            partitions.add(e.partition);
        }
        assertEquals(expected, partitions, "a partition ended twice or is missing: " + attempt0);
        TaskEnds.End failed = null;
        for (TaskEnds.End e : attempt0) {
            if (e.partition == peers && !e.successful && e.reason.contains(cause)) {
                failed = e;
            }
        }
        assertTrue(failed != null, "no failed task of partition " + peers + " in " + attempt0);
        int jccl = 0;
        for (TaskEnds.End e : attempt0) {
            if (e.partition == peers) {
                continue;
            }
            assertTrue(!e.successful, "a peer of the failed task succeeded: " + e);
            assertTrue(e.finishMillis - failed.finishMillis < 10_000, "a peer ended long after the failure: " + e
                    + " (the failure: " + failed + ")");
            if (e.reason.contains("io.jccl.")) {
                jccl++;
            }
        }
        if (requireJcclReason) {
            assertTrue(jccl == peers, "not every peer failed with a jccl exception: " + attempt0);
        }
    }
}
