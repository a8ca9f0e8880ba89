package io.jccl;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * What {@link Jccl#initProcessGroup(ProcessGroupOptions)} needs to form a job's world communicator, as torch's
 * {@code init_process_group} takes it: an init method, this process's rank and the world size, a timeout, a
 * transport and a job secret. Immutable; each {@code with...} returns a copy.
 *
 * <pre>{@code
 * Communicator world = Jccl.initProcessGroup(ProcessGroupOptions.of("tcp://10.0.0.1:29500")
 *         .withRank(rank).withWorldSize(4).withTimeout(Duration.ofMinutes(5)));
 * }</pre>
 *
 * <p>Init methods: {@code env://} (the master's address and port, and unless given here the rank and world size,
 * from the environment that {@code jccl launch}, torchrun, mpirun or srun set; an unset master address is an error,
 * never a default), {@code tcp://host:port} (rank 0 serves the rendezvous store at that address; give every rank
 * the same one) and {@code file:///path} (a store in a directory every rank can reach; it must be new or empty,
 * and is emptied once every rank is connected). With {@code tcp://} and {@code file://} the rank and world size
 * must be given.
 */
public final class ProcessGroupOptions {
    private final String initMethod;
    private final int rank;
    private final int worldSize;
    private final Duration timeout;
    private final String transport;
    private final String secretHex;
    private final CommunicatorConfig config;

    private ProcessGroupOptions(String initMethod, int rank, int worldSize, Duration timeout, String transport,
                                String secretHex, CommunicatorConfig config) {
        this.initMethod = initMethod;
        this.rank = rank;
        this.worldSize = worldSize;
        this.timeout = timeout;
        this.transport = transport;
        this.secretHex = secretHex;
        this.config = config;
    }

    /**
     * Options with the init method {@code initMethod} ({@code env://}, {@code tcp://host:port} or
     * {@code file:///path}) and everything else unset: rank and world size from the environment (env:// only),
     * the timeout of {@code JCCL_TIMEOUT_MS} (30 minutes; for the rendezvous {@code JCCL_CONNECT_TIMEOUT_MS}, 60 s),
     * the transport of {@code JCCL_TRANSPORT} (auto), the secret of {@code JCCL_SECRET} (none).
     *
     * @param initMethod where the ranks meet: {@code env://}, {@code tcp://host:port} or {@code file:///path}
     *        (parsed by {@link Jccl#initProcessGroup(ProcessGroupOptions)})
     * @return the options
     * @throws NullPointerException when {@code initMethod} is null
     */
    public static ProcessGroupOptions of(String initMethod) {
        Objects.requireNonNull(initMethod, "initMethod");
        return new ProcessGroupOptions(initMethod, -1, -1, null, null, null, null);
    }

    /**
     * These options with this process's rank.
     *
     * @param newRank this process's rank, 0 to world size - 1 (checked against the world size by
     *        {@link Jccl#initProcessGroup(ProcessGroupOptions)})
     * @return a copy with this rank
     * @throws IllegalArgumentException when {@code newRank} is negative
     */
    public ProcessGroupOptions withRank(int newRank) {
        if (newRank < 0) {
            throw new IllegalArgumentException("rank must be >= 0, got " + newRank);
        }
        return new ProcessGroupOptions(initMethod, newRank, worldSize, timeout, transport, secretHex, config);
    }

    /**
     * These options with the number of ranks of the job.
     *
     * @param newWorldSize the number of ranks, at least 1
     * @return a copy with this world size
     * @throws IllegalArgumentException when {@code newWorldSize} is less than 1
     */
    public ProcessGroupOptions withWorldSize(int newWorldSize) {
        if (newWorldSize < 1) {
            throw new IllegalArgumentException("world size must be >= 1, got " + newWorldSize);
        }
        return new ProcessGroupOptions(initMethod, rank, newWorldSize, timeout, transport, secretHex, config);
    }

    /**
     * These options with {@code newTimeout} for every collective and point-to-point call (as torch's
     * {@code timeout}), and for the rendezvous: how long a rank waits for the others to join and connect.
     *
     * @param newTimeout the timeout, positive; it wins over the config's
     * @return a copy with this timeout
     * @throws IllegalArgumentException when {@code newTimeout} is zero or negative
     */
    public ProcessGroupOptions withTimeout(Duration newTimeout) {
        Objects.requireNonNull(newTimeout, "timeout");
        if (newTimeout.isNegative() || newTimeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + newTimeout);
        }
        return new ProcessGroupOptions(initMethod, rank, worldSize, JcclSettings.bounded(newTimeout), transport,
                secretHex, config);
    }

    /**
     * These options with the transport between the ranks: {@code auto} (shared memory between ranks that share
     * a host, TCP between the others), {@code shm} (every rank on this host) or {@code tcp}.
     *
     * @param newTransport {@code auto}, {@code shm} or {@code tcp}, in any case and with surrounding blanks
     * @return a copy with this transport, in lower case
     * @throws IllegalArgumentException when {@code newTransport} is none of them
     */
    public ProcessGroupOptions withTransport(String newTransport) {
        String t = Objects.requireNonNull(newTransport, "transport").trim().toLowerCase(Locale.ROOT);
        if (!t.equals("auto") && !t.equals("shm") && !t.equals("tcp")) {
            throw new IllegalArgumentException("transport must be auto, shm or tcp, got '" + newTransport + "'");
        }
        return new ProcessGroupOptions(initMethod, rank, worldSize, timeout, t, secretHex, config);
    }

    /**
     * These options with the job secret that every rank must present (hex, as {@code JCCL_SECRET}; e.g.
     * {@code openssl rand -hex 32}, shared with the ranks by the launcher); the empty string: none.
     *
     * @param hex the secret as hexadecimal digits, or "" for no secret (even when {@code JCCL_SECRET} is set)
     * @return a copy with this secret
     * @throws IllegalArgumentException when {@code hex} is not hexadecimal
     */
    public ProcessGroupOptions withSecret(String hex) {
        Objects.requireNonNull(hex, "secret");
        try { // fails now, naming the problem, rather than at the rendezvous
            java.util.HexFormat.of().parseHex(hex);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the secret must be hexadecimal, as JCCL_SECRET", e);
        }
        return new ProcessGroupOptions(initMethod, rank, worldSize, timeout, transport, hex, config);
    }

    /**
     * These options with {@code newConfig}'s algorithms, trace and deterministic mode, and its settings for the
     * transports (default: {@link CommunicatorConfig#fromEnvironment()}). A timeout given here wins over the
     * config's.
     *
     * @param newConfig the config of the communicator
     * @return a copy with this config
     */
    public ProcessGroupOptions withConfig(CommunicatorConfig newConfig) {
        Objects.requireNonNull(newConfig, "config");
        return new ProcessGroupOptions(initMethod, rank, worldSize, timeout, transport, secretHex, newConfig);
    }

    /** {@return the init method, as given} */
    public String initMethod() {
        return initMethod;
    }

    /** {@return the rank, or -1 when not given} env:// then reads it from the environment. */
    public int rank() {
        return rank;
    }

    /** {@return the world size, or -1 when not given} env:// then reads it from the environment. */
    public int worldSize() {
        return worldSize;
    }

    /**
     * {@return the timeout, or null for the defaults} The calls then take the config's ({@code JCCL_TIMEOUT_MS},
     * 30 minutes), the rendezvous {@code JCCL_CONNECT_TIMEOUT_MS} (60 s).
     */
    public Duration timeout() {
        return timeout;
    }

    /** {@return the transport, or null for {@code JCCL_TRANSPORT}} (auto) */
    public String transport() {
        return transport;
    }

    /** {@return the secret as hex ("" for none), or null for {@code JCCL_SECRET}} */
    public String secretHex() {
        return secretHex;
    }

    /** {@return the config, or null for {@link CommunicatorConfig#fromEnvironment()}} */
    public CommunicatorConfig config() {
        return config;
    }

    @Override
    public String toString() {
        return "ProcessGroupOptions[" + initMethod + ", rank " + (rank < 0 ? "from environment" : rank)
                + ", world size " + (worldSize < 0 ? "from environment" : worldSize)
                + (timeout == null ? "" : ", timeout " + timeout) + (transport == null ? "" : ", " + transport)
                + (secretHex == null ? "" : secretHex.isEmpty() ? ", no secret" : ", secret given") + "]";
    }
}
