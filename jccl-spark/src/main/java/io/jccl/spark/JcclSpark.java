package io.jccl.spark;

import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.JcclSettings;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;
import org.apache.spark.SparkEnv;
import org.apache.spark.util.TaskCompletionListener;
import org.apache.spark.util.TaskFailureListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import scala.reflect.ClassTag;
import scala.runtime.AbstractFunction1;

/**
 * A jccl {@link Communicator} for the tasks of a Spark barrier stage ({@code rdd.barrier().mapPartitions(...)}):
 *
 * <pre>{@code
 * BarrierTaskContext ctx = BarrierTaskContext.get();
 * Communicator comm = JcclSpark.communicator(ctx);   // rank = partition id, size = number of partitions
 * comm.allReduce(gradient, ReduceOp.SUM);
 * }</pre>
 *
 * <p>The ranks meet through the barrier context's {@code allGather} alone (see {@link BarrierRendezvous}): no driver
 * port, no service, nothing to configure. The communicator belongs to this stage attempt (its identity and the
 * secret its connections prove include the application, stage and attempt), is aborted when this task fails or
 * Spark kills it, so that every other task of the attempt fails at once with jccl's errors and Spark can retry
 * the stage, and is closed when the task completes.
 */
public final class JcclSpark {
    private static final Logger LOG = LoggerFactory.getLogger(JcclSpark.class);
    /** How often a task's communicator checks whether Spark asked to kill the task. */
    static final long KILL_POLL_MILLIS = 100;

    private JcclSpark() {
    }

    /**
     * The communicator of this barrier task's stage attempt, with the settings of this executor's environment
     * ({@code JCCL_TIMEOUT_MS}, {@code JCCL_TRANSPORT}, ... as in docs/configuration.md; those of a job launched
     * by environment, such as {@code JCCL_RANK}, {@code JCCL_MASTER_ADDR}, {@code JCCL_SECRET} and
     * {@code JCCL_STORE}, play no part: see docs/spark.md).
     *
     * @throws IllegalArgumentException when {@code JCCL_TRANSPORT} is not {@code auto}, {@code tcp} or {@code shm},
     *         naming the variable and the partition
     */
    public static Communicator communicator(BarrierTaskContext context) {
        JcclSettings settings;
        try { // the stage gives the store and the secret: a stray JCCL_STORE or JCCL_SECRET must not fail the task
            settings = JcclSettings.fromEnvironmentIgnoring(JcclSettings.STORE_ENV, JcclSettings.SECRET_ENV);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("partition " + context.partitionId() + " of "
                    + identity(context, context.getTaskInfos().length) + ": " + e.getMessage(), e);
        }
        String transport = transport(settings.environment(), context.partitionId(),
                identity(context, context.getTaskInfos().length));
        return communicator(context, CommunicatorConfig.of(settings), transport);
    }

    /** {@code JCCL_TRANSPORT} of {@code env}, {@code auto} where unset or blank, checked for a task's errors. */
    static String transport(java.util.Map<String, String> env, int partition, String identity) {
        String raw = env.getOrDefault("JCCL_TRANSPORT", "");
        String transport = raw.isBlank() ? "auto" : raw.trim().toLowerCase(Locale.ROOT);
        if (!transport.equals("auto") && !transport.equals("tcp") && !transport.equals("shm")) {
            throw new IllegalArgumentException("partition " + partition + " of " + identity + ": JCCL_TRANSPORT must"
                    + " be auto, shm or tcp, got '" + raw + "'");
        }
        return transport;
    }

    /**
     * The communicator of this barrier task's stage attempt with {@code config}; {@code transport} is {@code auto}
     * (shared memory between tasks that prove they share a host, TCP between the others), {@code tcp} or
     * {@code shm}.
     */
    public static Communicator communicator(BarrierTaskContext context, CommunicatorConfig config, String transport) {
        int rank = context.partitionId();
        BarrierTaskInfo[] infos = context.getTaskInfos();
        int world = infos.length;
        String identity = identity(context, world);
        String host = hostOf(infos[rank].address());
        Communicator comm = BarrierRendezvous.connect(rank, world, identity, host, transport, context::allGather,
                config);
        AtomicBoolean over = new AtomicBoolean();
        context.addTaskFailureListener((TaskFailureListener) (ctx, error) -> {
            if (over.compareAndSet(false, true)) {
                quietly(() -> comm.abort("partition " + rank + " of " + identity + " failed: " + error));
            }
        });
        context.addTaskCompletionListener((TaskCompletionListener) ctx -> {
            over.set(true);
            quietly(comm::close);
        });
        Thread watch = new Thread(() -> watchKill(context, comm, over, identity), "jccl-spark-kill-watch-" + rank);
        watch.setDaemon(true);
        watch.start();
        return comm;
    }

    /**
     * Runs {@code fn} in one barrier stage over the partitions of {@code rdd}, each task with the stage's
     * communicator (rank = partition id, closed when the task ends), and returns the results in partition order.
     *
     * <p>The stage's results go to the driver through a shuffle: Spark retries a failed barrier stage only if it is a
     * shuffle map stage (a barrier result stage fails the job), so a task lost mid-stage (an executor killed, a
     * task failing) makes Spark run the whole stage again as a new attempt with new communicators, up to
     * {@code spark.stage.maxConsecutiveAttempts} times.
     */
    public static <T, R extends Serializable> List<R> run(JavaRDD<T> rdd, BarrierFunction<T, R> fn) {
        ClassTag<byte[]> bytes = scala.reflect.ClassTag$.MODULE$.apply(byte[].class);
        RDD<byte[]> out = rdd.rdd().barrier().mapPartitions(new StageTask<>(fn), false, bytes);
        List<byte[]> collected = new JavaRDD<>(out, bytes).repartition(1).collect();
        int n = rdd.getNumPartitions();
        List<R> results = new ArrayList<>(java.util.Collections.nCopies(n, null));
        for (byte[] b : collected) {
            int partition = java.nio.ByteBuffer.wrap(b).getInt();
            @SuppressWarnings("unchecked") // fn returned it as R in the task that serialized it
            R r = (R) deserialize(b, partition);
            results.set(partition, r);
        }
        return results;
    }

    /** The task body of {@link #run}: the communicator, {@code fn}, and its result with the partition id. */
    private static final class StageTask<T, R extends Serializable>
            extends AbstractFunction1<scala.collection.Iterator<T>, scala.collection.Iterator<byte[]>>
            implements Serializable {
        private static final long serialVersionUID = 1L;
        private final BarrierFunction<T, R> fn;

        StageTask(BarrierFunction<T, R> fn) {
            this.fn = fn;
        }

        @Override
        public scala.collection.Iterator<byte[]> apply(scala.collection.Iterator<T> partition) {
            BarrierTaskContext context = BarrierTaskContext.get();
            R result = null;
            Communicator comm = communicator(context);
            Throwable failure = null;
            try {
                result = fn.apply(scala.jdk.javaapi.CollectionConverters.asJava(partition), comm);
            } catch (Throwable e) {
                failure = e;
                try { // tell the peers why, before the close below would only tell them that this rank left
                    comm.abort("partition " + context.partitionId() + " of " + identity(context,
                            context.getTaskInfos().length) + " failed: " + e);
                } catch (RuntimeException notTold) {
                    e.addSuppressed(notTold);
                }
            }
            try {
                comm.close();
            } catch (RuntimeException closing) { // the task's own failure stays the one thrown
                if (failure == null) {
                    throw closing;
                }
                failure.addSuppressed(closing);
            }
            if (failure instanceof RuntimeException) {
                throw (RuntimeException) failure;
            }
            if (failure instanceof Error) {
                throw (Error) failure;
            }
            if (failure != null) {
                throw new IllegalStateException("partition " + context.partitionId() + ": " + failure, failure);
            }
            byte[] b = serialize(context.partitionId(), result);
            return scala.jdk.javaapi.CollectionConverters.asScala(List.of(b).iterator());
        }
    }

    /** A task's result for the driver: the partition id (4 bytes, so that the driver can name it) and the result. */
    private static byte[] serialize(int partition, Object o) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        bytes.writeBytes(java.nio.ByteBuffer.allocate(4).putInt(partition).array());
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(o);
        } catch (IOException e) {
            throw new UncheckedIOException("partition " + partition + ": cannot serialize its result: " + e, e);
        }
        return bytes.toByteArray();
    }

    /** The result of partition {@code partition} from {@link #serialize}'s bytes. */
    private static Object deserialize(byte[] b, int partition) {
        // the application's classes: through the context class loader (Spark's, with the application's jars)
        ClassLoader loader = Thread.currentThread().getContextClassLoader();
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(b, 4, b.length - 4)) {
            @Override
            protected Class<?> resolveClass(java.io.ObjectStreamClass desc) throws IOException,
                    ClassNotFoundException {
                try {
                    return Class.forName(desc.getName(), false, loader);
                } catch (ClassNotFoundException e) {
                    return super.resolveClass(desc);
                }
            }
        }) {
            return in.readObject();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the result of partition " + partition + ": " + e, e);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("cannot read the result of partition " + partition + ": class "
                    + e.getMessage() + " not found", e);
        }
    }

    /** A listener's clean-up: what fails in it (a communicator closed already) must not hide the task's own end. */
    private static void quietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            LOG.debug("while ending a task's communicator: {}", e.toString());
        }
    }

    /**
     * The identity of a stage attempt: application, stage, stage attempt and number of partitions. Spark's
     * barrier coordinator already keeps attempts apart; this string also goes into every rendezvous message and
     * the secret of every connection.
     */
    static String identity(BarrierTaskContext context, int world) {
        String app = "?";
        SparkEnv env = SparkEnv.get();
        if (env != null) {
            app = env.conf().getAppId();
        }
        return "spark app " + app + " stage " + context.stageId() + " attempt " + context.stageAttemptNumber()
                + " of " + world + " partitions";
    }

    /** A barrier task's address as Spark gives it ({@code host} or {@code host:port}): the host. */
    static String hostOf(String address) {
        String a = address == null ? "" : address.trim();
        if (a.startsWith("[")) { // [v6]:port
            int close = a.indexOf(']');
            return close > 0 ? a.substring(1, close) : a;
        }
        int colon = a.lastIndexOf(':');
        if (colon > 0 && a.indexOf(':') == colon) {
            a = a.substring(0, colon);
        }
        return a.isEmpty() ? "127.0.0.1" : a;
    }

    /**
     * Spark kills the other tasks of a failed barrier attempt without interrupting their threads; a task blocked in
     * a collective would not notice. This thread does: it aborts the communicator, which ends the call at once.
     */
    private static void watchKill(BarrierTaskContext context, Communicator comm, AtomicBoolean over, String identity) {
        try {
            while (!over.get()) {
                if (context.isInterrupted()) {
                    if (over.compareAndSet(false, true)) {
                        String why = context.getKillReason().isDefined() ? context.getKillReason().get() : "killed";
                        LOG.info("{}: Spark killed partition {}: {}", identity, context.partitionId(), why);
                        comm.abort("Spark killed partition " + context.partitionId() + " of " + identity + ": "
                                + why);
                    }
                    return;
                }
                Thread.sleep(KILL_POLL_MILLIS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
