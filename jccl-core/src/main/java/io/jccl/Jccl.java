package io.jccl;

import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.transport.local.QueueMesh;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/** Entry points: communicators for ranks that are threads of this JVM, or processes of a launched job. */
public final class Jccl {
    private Jccl() {
    }

    /**
     * The work of one rank, given its communicator.
     *
     * @param <T> what each rank returns
     */
    @FunctionalInterface
    public interface RankBody<T> {
        /**
         * Runs one rank.
         *
         * @param comm this rank's communicator, closed when this method returns or throws
         * @return this rank's result
         * @throws Exception any failure, which fails every rank ({@link #runThreads(int, RankBody)})
         */
        T run(Communicator comm) throws Exception;
    }

    /**
     * This process's rank of a job started by {@code jccl launch}, torchrun, mpirun or srun: reads the rank, world
     * size and master address from the environment ({@link io.jccl.rendezvous.LaunchEnvironment}) and connects to
     * every other rank. Every setting is read here, once ({@link JcclSettings}).
     *
     * @return this process's communicator, connected to every rank of the job
     */
    public static Communicator fromEnvironment() {
        return fromEnvironment(JcclSettings.fromEnvironment().communicatorConfig());
    }

    /**
     * As {@link #fromEnvironment()}, with {@code config}; the launch identity and the transports' settings come
     * from {@link CommunicatorConfig#settings()}, the environment read when the config was made.
     *
     * @param config the timeout, algorithms and settings of the communicator
     * @return this process's communicator, connected to every rank of the job
     */
    public static Communicator fromEnvironment(CommunicatorConfig config) {
        Objects.requireNonNull(config, "config");
        return io.jccl.rendezvous.Rendezvous.connect(
                io.jccl.rendezvous.LaunchEnvironment.from(config.settings().environment()), config);
    }

    /**
     * The world communicator of a job whose ranks are processes, formed as torch's {@code init_process_group}
     * forms one: every rank calls this with the same init method and world size and its own rank, and it returns
     * once every rank holds a communicator (or fails on every rank, naming the rank that never joined or what
     * differed). See {@link ProcessGroupOptions} for the init methods ({@code env://}, {@code tcp://host:port},
     * {@code file:///path}), the timeout, the transport and the secret.
     *
     * @param options the init method, and the rank and world size unless env:// reads them from the environment;
     *        unset options come from the environment, read once here
     * @return this process's world communicator, connected to every rank of the job
     * @throws IllegalArgumentException when the rank or world size is missing (and the init method is not
     *         env://), the rank is not below the world size, or the init method or a setting is malformed
     * @throws IllegalStateException when env:// finds no master address or port in the environment (and the
     *         world has more than one rank)
     * @throws JcclException when the job cannot start: a rank never joined within the timeout, two ranks joined
     *         with the same rank, or the ranks disagree on the world size
     */
    public static Communicator initProcessGroup(ProcessGroupOptions options) {
        Objects.requireNonNull(options, "options");
        CommunicatorConfig config = options.config() != null ? options.config()
                : JcclSettings.fromEnvironment().communicatorConfig();
        JcclSettings settings = config.settings();
        java.util.Map<String, String> env = settings.environment();
        boolean fromEnv = options.initMethod().trim().toLowerCase(java.util.Locale.ROOT).startsWith("env:");
        int rank = options.rank();
        int worldSize = options.worldSize();
        if (fromEnv && (rank < 0 || worldSize < 0)) {
            io.jccl.rendezvous.LaunchEnvironment launched = io.jccl.rendezvous.LaunchEnvironment.from(env);
            rank = rank < 0 ? launched.rank() : rank;
            worldSize = worldSize < 0 ? launched.worldSize() : worldSize;
        }
        if (rank < 0 || worldSize < 0) {
            throw new IllegalArgumentException("initProcessGroup(" + options.initMethod() + "): "
                    + (rank < 0 ? "the rank" : "the world size") + " must be given (withRank, withWorldSize) "
                    + "unless the init method is env://");
        }
        if (rank >= worldSize) {
            throw new IllegalArgumentException("initProcessGroup: rank " + rank + " is not a rank of a world of "
                    + worldSize + ": ranks are 0 to " + (worldSize - 1));
        }
        if (options.timeout() != null) {
            config = config.withTimeout(options.timeout());
        }
        String transport = options.transport() != null ? options.transport()
                : env.getOrDefault("JCCL_TRANSPORT", "auto").trim().toLowerCase(java.util.Locale.ROOT);
        io.jccl.rendezvous.LaunchEnvironment launch = new io.jccl.rendezvous.LaunchEnvironment(rank, worldSize,
                rank, null, -1, transport.isEmpty() ? "auto" : transport);
        io.jccl.rendezvous.InitMethod init = io.jccl.rendezvous.InitMethod.parse(options.initMethod(), env, worldSize);
        io.jccl.security.JobSecret secret = options.secretHex() != null
                ? (options.secretHex().isEmpty() ? io.jccl.security.JobSecret.none()
                : io.jccl.security.JobSecret.fromHex(options.secretHex()))
                : io.jccl.security.JobSecret.from(settings);
        java.time.Duration wait = options.timeout() != null ? options.timeout() : settings.connectTimeout();
        return io.jccl.rendezvous.Rendezvous.connect(init, launch, config, secret, wait);
    }

    /**
     * {@link #initProcessGroup(ProcessGroupOptions)} with {@code initMethod}, {@code rank} and {@code worldSize},
     * everything else from the environment ({@code JCCL_TIMEOUT_MS}, {@code JCCL_TRANSPORT}, {@code JCCL_SECRET}).
     *
     * @param initMethod where the ranks meet: {@code env://}, {@code tcp://host:port} or {@code file:///path}
     * @param rank this process's rank, 0 to {@code worldSize} - 1
     * @param worldSize the number of ranks of the job, at least 1
     * @return this process's world communicator, connected to every rank of the job
     * @throws IllegalArgumentException when the rank is negative or not below {@code worldSize}, or the world size
     *         is less than 1
     */
    public static Communicator initProcessGroup(String initMethod, int rank, int worldSize) {
        return initProcessGroup(ProcessGroupOptions.of(initMethod).withRank(rank).withWorldSize(worldSize));
    }

    /** The work of one rank that returns nothing, given its communicator (see {@link #run}). */
    @FunctionalInterface
    public interface RankTask {
        /**
         * Runs one rank.
         *
         * @param comm this rank's communicator, closed when this method returns or throws
         * @throws Exception any failure, which fails every rank ({@link #run(int, RankTask)})
         */
        void run(Communicator comm) throws Exception;
    }

    /**
     * {@link #runThreads(int, RankBody)} for a body that returns nothing: runs {@code body} on {@code worldSize}
     * threads, one rank each, and returns when every rank is done (throwing the first failure as
     * {@code runThreads} does). Not an overload of {@code runThreads}: with one, a lambda such as
     * {@code comm -> comm.rank()} would fit both and fail to compile as ambiguous.
     *
     * @param worldSize the number of ranks
     * @param body the work of each rank
     * @throws JcclException if a rank failed
     */
    public static void run(int worldSize, RankTask body) {
        run(worldSize, JcclSettings.fromEnvironment().communicatorConfig(), body);
    }

    /**
     * {@link #run(int, RankTask)} with {@code config}: {@link #runThreads(int, CommunicatorConfig, RankBody)} of a
     * body that returns null.
     *
     * @param worldSize the number of ranks
     * @param config the timeout, algorithms and settings of every communicator
     * @param body the work of each rank
     * @throws JcclException if a rank failed
     */
    public static void run(int worldSize, CommunicatorConfig config, RankTask body) {
        Objects.requireNonNull(body, "body");
        runThreads(worldSize, config, comm -> {
            body.run(comm);
            return null;
        });
    }

    /**
     * {@code worldSize} communicators over one in-process queue mesh, rank i at index i. Each must be driven by
     * its own thread; {@link #runThreads(int, RankBody)} does that for you.
     *
     * @param worldSize the number of ranks
     * @return the communicators, rank i at index i
     */
    public static List<Communicator> inProcess(int worldSize) {
        return inProcess(worldSize, JcclSettings.fromEnvironment().communicatorConfig());
    }

    /**
     * As {@link #inProcess(int)}, the mesh sized by {@code config}'s {@link CommunicatorConfig#settings()}.
     *
     * @param worldSize the number of ranks
     * @param config the timeout, algorithms and settings of every communicator
     * @return the communicators, rank i at index i
     */
    public static List<Communicator> inProcess(int worldSize, CommunicatorConfig config) {
        Objects.requireNonNull(config, "config");
        JcclSettings settings = config.settings();
        QueueMesh mesh = QueueMesh.create(worldSize, settings.localArenaBytes(), settings.oversubscribedSpins());
        List<Communicator> comms = new ArrayList<>(worldSize);
        for (int r = 0; r < worldSize; r++) {
            comms.add(new DefaultCommunicator(mesh.endpoint(r), config));
        }
        return Collections.unmodifiableList(comms);
    }

    /**
     * Runs {@code body} on {@code worldSize} threads, one rank each, with the settings of the environment; see
     * {@link #runThreads(int, CommunicatorConfig, RankBody)}.
     *
     * @param <T> what each rank returns
     * @param worldSize the number of ranks
     * @param body the work of each rank
     * @return each rank's result, rank i at index i
     */
    public static <T> List<T> runThreads(int worldSize, RankBody<T> body) {
        return runThreads(worldSize, JcclSettings.fromEnvironment().communicatorConfig(), body);
    }

    /**
     * Runs {@code body} on {@code worldSize} threads, one rank each, and returns each rank's result. When a rank
     * fails, its communicator is aborted so that every other rank's pending or next collective fails too instead
     * of hanging; after all threads end, the first failure is thrown (as a {@link JcclException} whose cause is
     * that rank's exception, with every other rank's failure suppressed).
     *
     * @param <T> what each rank returns
     * @param worldSize the number of ranks
     * @param config the timeout, algorithms and settings of every communicator
     * @param body the work of each rank
     * @return each rank's result, rank i at index i
     * @throws JcclException if a rank failed
     */
    public static <T> List<T> runThreads(int worldSize, CommunicatorConfig config, RankBody<T> body) {
        Objects.requireNonNull(body, "body");
        List<Communicator> comms = inProcess(worldSize, config);
        List<T> results = new ArrayList<>(Collections.nCopies(worldSize, null));
        AtomicReference<Throwable> first = new AtomicReference<>();
        int[] firstRank = {-1};
        List<Throwable> others = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>(worldSize);
        for (int r = 0; r < worldSize; r++) {
            int rank = r;
            Thread t = new Thread(() -> {
                Communicator comm = comms.get(rank);
                try {
                    T result = body.run(comm);
                    synchronized (results) {
                        results.set(rank, result);
                    }
                } catch (Throwable e) {
                    if (first.compareAndSet(null, e)) {
                        synchronized (firstRank) {
                            firstRank[0] = rank;
                        }
                    } else {
                        others.add(e);
                    }
                    comm.abort("rank " + rank + " failed: " + e);
                } finally {
                    // a rank whose body has returned takes no part in any later call: its peers learn it at once
                    comm.close();
                }
            }, "jccl-rank-" + r);
            try {
                t.start();
            } catch (OutOfMemoryError | RuntimeException e) { // no thread for this rank (a container's pid limit)
                // the ranks already started wait in calls for one that never comes: end them now, not at their
                // deadline (30 minutes by default), and close every communicator, theirs included
                for (int k = 0; k < worldSize; k++) {
                    comms.get(k).abort("rank " + rank + " could not start its thread: " + e);
                }
                long until = System.nanoTime() + 10_000_000_000L; // for all of them together
                for (Thread started : threads) {
                    try {
                        started.join(Math.max(1, (until - System.nanoTime()) / 1_000_000));
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
                for (int k = rank; k < worldSize; k++) {
                    comms.get(k).close();
                }
                throw e;
            }
            threads.add(t);
        }
        boolean interrupted = false;
        for (Thread t : threads) {
            while (t.isAlive()) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                    for (Communicator c : comms) {
                        c.abort("interrupted");
                    }
                }
            }
        }
        for (Communicator c : comms) {
            c.close();
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        Throwable f = first.get();
        if (f != null) {
            int rank;
            synchronized (firstRank) {
                rank = firstRank[0];
            }
            JcclException e = new JcclException(rank, f instanceof JcclException ? ((JcclException) f).operation()
                    : null, -1, "rank " + rank + " failed first: " + f.getMessage(), f);
            for (Throwable o : others) {
                e.addSuppressed(o);
            }
            throw e;
        }
        return results;
    }
}
