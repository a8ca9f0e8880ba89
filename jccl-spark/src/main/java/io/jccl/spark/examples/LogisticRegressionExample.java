package io.jccl.spark.examples;

import io.jccl.Communicator;
import io.jccl.ReduceOp;
import io.jccl.spark.JcclSpark;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.classification.LogisticRegression;
import org.apache.spark.ml.classification.LogisticRegressionModel;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * Logistic regression by gradient descent with every iteration inside one Spark barrier stage: each task sums the
 * gradient of its partition, one {@code allReduce} gives every task the gradient of the whole data set, and every
 * task takes the same step. No driver round trip per iteration, unlike MLlib's {@code treeAggregate}; the same
 * model as MLlib's {@link LogisticRegression} (unregularized, with intercept) on the same data.
 *
 * <p>{@code main} trains both in one application and prints the table of docs/spark.md:
 * {@code LogisticRegressionExample MASTER PARTITIONS ROWS_PER_PARTITION FEATURES}.
 */
public final class LogisticRegressionExample {
    private LogisticRegressionExample() {
    }

    /** What the barrier stage returns from rank 0: the model and how it got there. */
    public static final class Fit implements Serializable {
        private static final long serialVersionUID = 1L;
        /** Coefficients by feature, then the intercept. */
        public final double[] weights;
        public final int iterations;
        /** Time of each iteration on rank 0 (local gradient, allReduce, step), ns. */
        public final long[] iterationNanos;
        /** The stage attempt that produced this fit. */
        public final int stageAttempt;
        /** The transport the communicator ran over. */
        public final String transport;

        Fit(double[] weights, int iterations, long[] iterationNanos, int stageAttempt, String transport) {
            this.weights = weights;
            this.iterations = iterations;
            this.iterationNanos = iterationNanos;
            this.stageAttempt = stageAttempt;
            this.transport = transport;
        }

        /** Mean time of the iterations after the first (which warms the JIT and the connections up), ms. */
        public double msPerIteration() {
            return Arrays.stream(iterationNanos, Math.min(1, iterationNanos.length - 1), iterationNanos.length)
                    .average().orElse(0) / 1e6;
        }
    }

    /**
     * A data set of {@code partitions x rows} rows of {@code features} standard normal features and a label drawn
     * from the logistic model of {@link #trueWeights}; each partition from its own seed, so that a recomputed
     * partition (a lost executor) is the same. Cached: both trainers read the same rows.
     */
    public static JavaRDD<double[]> generate(JavaSparkContext sc, int partitions, int rows, int features, long seed) {
        double[] truth = trueWeights(features);
        List<Integer> ids = IntStream.range(0, partitions).boxed().collect(Collectors.toList());
        return sc.parallelize(ids, partitions).mapPartitions(it -> {
            List<double[]> out = new ArrayList<>();
            while (it.hasNext()) {
                Random random = new Random(seed * 1_000_003L + it.next());
                for (int i = 0; i < rows; i++) {
                    double[] row = new double[features + 1];
                    double z = truth[features];
                    for (int j = 0; j < features; j++) {
                        row[j + 1] = random.nextGaussian();
                        z += truth[j] * row[j + 1];
                    }
                    row[0] = random.nextDouble() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
                    out.add(row);
                }
            }
            return out.iterator();
        }).persist(StorageLevel.MEMORY_ONLY());
    }

    /** The generating model: coefficients 1, -0.5, 0.25, ... by feature, then the intercept 0.3. */
    public static double[] trueWeights(int features) {
        double[] w = new double[features + 1];
        for (int j = 0; j < features; j++) {
            w[j] = (j % 2 == 0 ? 1 : -1) / Math.pow(2, j % 4);
        }
        w[features] = 0.3;
        return w;
    }

    /**
     * Gradient descent on the mean log loss, all iterations in one barrier stage, each task on its partition
     * (rows {@code [label, x...]}): stops after {@code maxIterations} or once the gradient's norm is below
     * {@code tolerance}; every rank decides from the same reduced gradient, so all stop together.
     */
    public static Fit trainWithJccl(JavaRDD<double[]> data, int maxIterations, double stepSize, double tolerance) {
        List<Fit> fits = JcclSpark.run(data, (Iterator<double[]> partition, Communicator comm) ->
                descend(partition, comm, maxIterations, stepSize, tolerance, null));
        return fits.get(0);
    }

    /** Called by every task before each allReduce of {@link #descend}: a progress hook (the tests fail a task there). */
    @FunctionalInterface
    public interface IterationHook extends Serializable {
        void beforeAllReduce(int iteration, Communicator comm);
    }

    /**
     * The task body of {@link #trainWithJccl}: {@code hook} (or null) runs before each iteration's allReduce.
     */
    public static Fit descend(Iterator<double[]> partition, Communicator comm, int maxIterations, double stepSize,
                              double tolerance, IterationHook hook) {
        List<double[]> rows = new ArrayList<>();
        partition.forEachRemaining(rows::add);
        int d = rows.isEmpty() ? 0 : rows.get(0).length - 1;
        // every rank must know d: the largest over the ranks (a rank with no rows has none)
        long[] dims = {d};
        comm.allReduce(dims, ReduceOp.MAX);
        d = (int) dims[0];
        double[] w = new double[d + 1];
        double[] sums = new double[d + 2]; // gradient by coefficient, of the intercept, then the row count
        long[] nanos = new long[maxIterations];
        int attempt = BarrierTaskContext.get().stageAttemptNumber();
        int it = 0;
        while (it < maxIterations) {
            long t0 = System.nanoTime();
            Arrays.fill(sums, 0);
            for (double[] row : rows) {
                double z = w[d];
                for (int j = 0; j < d; j++) {
                    z += w[j] * row[j + 1];
                }
                double g = 1 / (1 + Math.exp(-z)) - row[0];
                for (int j = 0; j < d; j++) {
                    sums[j] += g * row[j + 1];
                }
                sums[d] += g;
            }
            sums[d + 1] = rows.size();
            if (hook != null) {
                hook.beforeAllReduce(it, comm);
            }
            comm.allReduce(sums, ReduceOp.SUM);
            double n = sums[d + 1];
            double norm = 0;
            for (int j = 0; j <= d; j++) {
                double grad = sums[j] / n;
                norm += grad * grad;
                w[j] -= stepSize * grad;
            }
            nanos[it++] = System.nanoTime() - t0;
            if (Math.sqrt(norm) < tolerance) {
                break;
            }
        }
        return new Fit(w, it, Arrays.copyOf(nanos, it), attempt, comm.transportName());
    }

    /** MLlib's model of the same data, with its iteration count and time. */
    public static final class MllibFit {
        public final double[] weights;
        public final int iterations;
        public final long nanos;

        MllibFit(double[] weights, int iterations, long nanos) {
            this.weights = weights;
            this.iterations = iterations;
            this.nanos = nanos;
        }

        public double msPerIteration() {
            return nanos / 1e6 / Math.max(1, iterations);
        }
    }

    /** MLlib's {@link LogisticRegression} (L-BFGS, no regularization, with intercept) on {@code data}. */
    public static MllibFit trainWithMllib(SparkSession spark, JavaRDD<double[]> data, int maxIterations,
                                          double tolerance) {
        StructType schema = new StructType()
                .add("label", DataTypes.DoubleType, false)
                .add("features", SQLDataTypes.VectorType(), false);
        JavaRDD<Row> rows = data.map(r -> RowFactory.create(r[0], Vectors.dense(Arrays.copyOfRange(r, 1, r.length))));
        Dataset<Row> frame = spark.createDataFrame(rows, schema).persist(StorageLevel.MEMORY_ONLY());
        frame.count();
        long t0 = System.nanoTime();
        LogisticRegressionModel model = new LogisticRegression().setRegParam(0).setMaxIter(maxIterations)
                .setTol(tolerance).setFitIntercept(true).fit(frame);
        long nanos = System.nanoTime() - t0;
        double[] c = model.coefficients().toArray();
        double[] w = Arrays.copyOf(c, c.length + 1);
        w[c.length] = model.intercept();
        int iterations = model.summary().totalIterations();
        frame.unpersist();
        return new MllibFit(w, iterations, nanos);
    }

    /** The largest absolute difference between two weight vectors. */
    public static double maxAbsDiff(double[] a, double[] b) {
        double m = 0;
        for (int i = 0; i < a.length; i++) {
            m = Math.max(m, Math.abs(a[i] - b[i]));
        }
        return m;
    }

    /** Step size, iteration cap and tolerance of the gradient descent that docs/spark.md reports. */
    public static final double STEP = 4.0;
    public static final int MAX_ITERATIONS = 300;
    public static final double TOLERANCE = 1e-7;

    /** One markdown row per trainer, for docs/spark.md. */
    public static String table(String master, long rowsTotal, int features, Fit jccl, long jcclStageNanos,
                               MllibFit mllib) {
        StringBuilder sb = new StringBuilder();
        sb.append("| master | rows | features | trainer | iterations | ms per iteration | total s | max abs diff to MLlib |\n");
        sb.append("|---|---|---|---|---|---|---|---|\n");
        sb.append(String.format(Locale.ROOT, "| %s | %d | %d | jccl allReduce, gradient descent (%s) | %d | %.2f | %.2f | %.1e |%n",
                master, rowsTotal, features, jccl.transport, jccl.iterations, jccl.msPerIteration(),
                jcclStageNanos / 1e9, maxAbsDiff(jccl.weights, mllib.weights)));
        sb.append(String.format(Locale.ROOT, "| %s | %d | %d | MLlib LogisticRegression (L-BFGS) | %d | %.2f | %.2f | 0 |%n",
                master, rowsTotal, features, mllib.iterations, mllib.msPerIteration(), mllib.nanos / 1e9));
        return sb.toString();
    }

    /** Waits until {@code n} executors have registered: a barrier stage needs all its slots at once. */
    static void awaitExecutors(JavaSparkContext sc, int n) {
        long until = System.currentTimeMillis() + 120_000;
        while (sc.sc().statusTracker().getExecutorInfos().length < n + 1) { // the driver is listed too
            if (System.currentTimeMillis() > until) {
                throw new IllegalStateException("fewer than " + n + " executors registered within 120 s");
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    public static void main(String[] args) {
        String master = args.length > 0 ? args[0] : "local[4]";
        int partitions = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int rows = args.length > 2 ? Integer.parseInt(args[2]) : 50_000;
        int features = args.length > 3 ? Integer.parseInt(args[3]) : 10;
        SparkSession spark = SparkSession.builder().master(master).appName("jccl logistic regression").getOrCreate();
        try {
            JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
            if (master.startsWith("local-cluster")) {
                awaitExecutors(sc, Integer.parseInt(master.replaceAll("local-cluster\\[(\\d+),.*", "$1")));
            }
            JavaRDD<double[]> data = generate(sc, partitions, rows, features, 42);
            data.count();
            long t0 = System.nanoTime();
            Fit jccl = trainWithJccl(data, MAX_ITERATIONS, STEP, TOLERANCE);
            long stage = System.nanoTime() - t0;
            MllibFit mllib = trainWithMllib(spark, data, 100, 1e-9);
            System.out.print(table(master, (long) partitions * rows, features, jccl, stage, mllib));
        } finally {
            spark.stop();
        }
    }
}
