package io.jccl;

import java.time.Duration;
import java.util.Objects;

/**
 * Communicator-wide settings: the default timeout, the trace, the algorithm per operation, deterministic mode, and the
 * {@link JcclSettings} the config was made from, which the entry points use for everything else (transports,
 * rendezvous, the tuning file). Immutable; every tunable has an environment variable (some a system property too)
 * and a default, docs/configuration.md.
 */
public final class CommunicatorConfig {
    /** Environment variable (or system property {@code jccl.timeout.ms}) for the default timeout. */
    public static final String TIMEOUT_ENV = JcclSettings.TIMEOUT_ENV;
    /** The system property {@code jccl.timeout.ms}, which wins over {@link #TIMEOUT_ENV}. */
    public static final String TIMEOUT_PROP_NAME = JcclSettings.TIMEOUT_PROPERTY;
    /** As torch.distributed: 30 minutes. */
    public static final Duration TIMEOUT_DEFAULT = JcclSettings.TIMEOUT_DEFAULT;

    /** Environment variable (or system property {@code jccl.trace}): path prefix of the JSONL bandwidth trace. */
    public static final String TRACE_ENV = JcclSettings.TRACE_ENV;
    /** The system property {@code jccl.trace}, which wins over {@link #TRACE_ENV}. */
    public static final String TRACE_PROP_NAME = JcclSettings.TRACE_PROPERTY;

    /** Prefix of the environment variables that choose an operation's algorithm: {@code JCCL_ALGO_ALL_REDUCE=tree}. */
    public static final String ALGORITHM_ENV_PREFIX = JcclSettings.ALGORITHM_ENV_PREFIX;

    private final Duration timeout;
    private final String tracePrefix;
    private final java.util.Map<OpType, Algorithm> algorithms;
    private final JcclSettings settings;
    private final String tuneParameters;
    private final boolean deterministic;

    private CommunicatorConfig(Duration timeout, String tracePrefix, java.util.Map<OpType, Algorithm> algorithms,
                               JcclSettings settings, String tuneParameters, boolean deterministic) {
        this.timeout = JcclSettings.bounded(timeout);
        this.tracePrefix = tracePrefix;
        this.algorithms = algorithms;
        this.settings = settings;
        this.tuneParameters = tuneParameters;
        this.deterministic = deterministic;
    }

    /**
     * AUTO's cost-model parameters as every rank of a job agreed on them at initialisation ({@code key=value}
     * lines, rank 0's tuning file), so that every rank makes the same choice even where the hosts' tuning files
     * differ; null (the default) reads this process's tuning file ({@code JCCL_TUNE_FILE}). Sub-groups inherit it.
     * Given to {@code Jccl.fromEnvironment} (or Spark's rendezvous), rank 0's are every rank's: a rank whose own
     * differ warns and takes rank 0's.
     *
     * @param parameters the parameters as {@code key=value} lines, or null
     * @return a copy of this config with those parameters
     */
    public CommunicatorConfig withTuneParameters(String parameters) {
        return new CommunicatorConfig(timeout, tracePrefix, algorithms, settings, parameters, deterministic);
    }

    /**
     * {@return the cost model's parameters of {@link #withTuneParameters}; null when this process's tuning file
     * is read}
     */
    public String tuneParameters() {
        return tuneParameters;
    }

    /**
     * The timeout, trace, algorithms and deterministic mode of {@code settings}, which the communicator's transports
     * also take.
     *
     * @param settings the settings
     * @return a config with their values
     */
    public static CommunicatorConfig of(JcclSettings settings) {
        Objects.requireNonNull(settings, "settings");
        return new CommunicatorConfig(settings.timeout(), settings.tracePrefix(), settings.algorithms(), settings,
                null, settings.deterministic());
    }

    /**
     * The settings this config was made from: what the entry points give the transports, the rendezvous and the
     * cost model. The communicator's own values are this config's ({@link #timeout()}, ...), which the
     * {@code with...} methods may have changed.
     *
     * @return the settings this config was made from
     */
    public JcclSettings settings() {
        return settings;
    }

    /**
     * The algorithm {@code op} uses when a call asks for AUTO (per communicator; the environment sets it too).
     *
     * @param op the operation
     * @param algorithm one of {@link Algorithm#available(OpType) op's algorithms}, or AUTO for the cost model's
     *        choice
     * @return a copy of this config with that choice
     * @throws IllegalArgumentException if {@code op} has no such algorithm
     */
    public CommunicatorConfig withAlgorithm(OpType op, Algorithm algorithm) {
        Algorithm.resolve(op, algorithm);
        java.util.Map<OpType, Algorithm> m = new java.util.EnumMap<>(OpType.class);
        m.putAll(algorithms);
        m.put(op, algorithm);
        return new CommunicatorConfig(timeout, tracePrefix, java.util.Collections.unmodifiableMap(m), settings,
                tuneParameters, deterministic);
    }

    /**
     * {@code algorithm} for every operation that has it (the others keep their choice).
     *
     * @param algorithm the algorithm
     * @return a copy of this config with that choice for every operation that has {@code algorithm}
     */
    public CommunicatorConfig withAlgorithm(Algorithm algorithm) {
        CommunicatorConfig c = this;
        for (OpType op : OpType.values()) {
            if (Algorithm.available(op).contains(algorithm)) {
                c = c.withAlgorithm(op, algorithm);
            }
        }
        return c;
    }

    /**
     * Deterministic mode on or off (the default: {@code JCCL_DETERMINISTIC}, else off). On, every floating-point
     * allreduce, reduce_scatter and reduce (coalesced allreduces and sub-groups' calls included) runs
     * {@link Algorithm#ORDERED}, which reduces every element in rank order {@code ((x0 op x1) op x2) ...}: the
     * result's bits then depend only on the inputs and the world size, never on the transport, the buffer's
     * layout, the timing or the algorithm asked for. An algorithm asked for by the call
     * ({@link CollectiveOptions#withAlgorithm}), by {@link #withAlgorithm} or by {@code JCCL_ALGO_<OP>} is
     * overridden for those calls, not refused: the mode is a guarantee about results, an algorithm a choice of
     * speed. Integer types, exact in any order, and the other operations keep their choice.
     *
     * <p>Every rank must set it alike; a rank that differs runs another algorithm, which every rank reports as an
     * {@code algorithm} mismatch ({@link CollectiveMismatchException}) at the first floating-point reduction.
     *
     * @param on whether to sum in rank order
     * @return a copy of this config with the mode set
     */
    public CommunicatorConfig withDeterministic(boolean on) {
        return new CommunicatorConfig(timeout, tracePrefix, algorithms, settings, tuneParameters, on);
    }

    /** {@return whether deterministic mode is on} See {@link #withDeterministic}. */
    public boolean deterministic() {
        return deterministic;
    }

    /**
     * The communicator-wide choice for {@code op}, or AUTO.
     *
     * @param op the operation
     * @return the algorithm set for it, or {@link Algorithm#AUTO}
     */
    public Algorithm algorithm(OpType op) {
        return algorithms.getOrDefault(op, Algorithm.AUTO);
    }

    /**
     * The settings of this process's environment ({@link JcclSettings#fromEnvironment()}): the defaults, overridden
     * by {@code -Djccl.timeout.ms} or {@code JCCL_TIMEOUT_MS}, {@code JCCL_TRACE}, {@code JCCL_ALGO_<OP>}, ...
     *
     * @return the config of this process's settings
     * @throws IllegalArgumentException if a setting has a bad value
     */
    public static CommunicatorConfig fromEnvironment() {
        return of(JcclSettings.fromEnvironment());
    }

    /**
     * The default deadline of every call of the communicator (a call may set its own,
     * {@link CollectiveOptions#withTimeout}).
     *
     * @param newTimeout a positive duration
     * @return a copy of this config with that timeout
     * @throws IllegalArgumentException if {@code newTimeout} is zero or negative
     */
    public CommunicatorConfig withTimeout(Duration newTimeout) {
        return new CommunicatorConfig(Objects.requireNonNull(newTimeout, "timeout"), tracePrefix, algorithms,
                settings, tuneParameters, deterministic).validated();
    }

    /**
     * Writes the JSONL bandwidth trace: one record per operation to {@code <prefix>.rank<r>.jsonl}
     * (docs/trace.md); null switches it off.
     *
     * @param prefix the path prefix, or null
     * @return a copy of this config with that trace
     */
    public CommunicatorConfig withTrace(String prefix) {
        return new CommunicatorConfig(timeout, prefix, algorithms, settings, tuneParameters, deterministic);
    }

    /** {@return the trace prefix, or null when tracing is off} */
    public String tracePrefix() {
        return tracePrefix;
    }

    /** {@return the default deadline of every call that does not set its own} */
    public Duration timeout() {
        return timeout;
    }

    private CommunicatorConfig validated() {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: timeout=" + timeout);
        }
        return this;
    }
}
