package io.jccl;

import java.time.Duration;
import java.util.Objects;

/**
 * Communicator-wide settings. Immutable; every tunable has a system property or environment variable and a
 * default.
 */
public final class CommunicatorConfig {
    /** Environment variable (or system property {@code jccl.timeout.ms}) for the default timeout. */
    public static final String TIMEOUT_ENV = "JCCL_TIMEOUT_MS";
    public static final String TIMEOUT_PROP_NAME = "jccl.timeout.ms";
    /** As torch.distributed: 30 minutes. */
    public static final Duration TIMEOUT_DEFAULT = Duration.ofMinutes(30);

    /** Environment variable (or system property {@code jccl.trace}): path prefix of the JSONL bandwidth trace. */
    public static final String TRACE_ENV = "JCCL_TRACE";
    public static final String TRACE_PROP_NAME = "jccl.trace";

    /** Prefix of the environment variables that choose an operation's algorithm: {@code JCCL_ALGO_ALL_REDUCE=tree}. */
    public static final String ALGORITHM_ENV_PREFIX = "JCCL_ALGO_";

    private final Duration timeout;
    private final String tracePrefix;
    private final java.util.Map<OpType, Algorithm> algorithms;

    private CommunicatorConfig(Duration timeout, String tracePrefix) {
        this(timeout, tracePrefix, algorithmsFromEnvironment());
    }

    private CommunicatorConfig(Duration timeout, String tracePrefix, java.util.Map<OpType, Algorithm> algorithms) {
        this.timeout = timeout;
        this.tracePrefix = tracePrefix;
        this.algorithms = algorithms;
    }

    /** {@code JCCL_ALGO_ALL_REDUCE=ring|tree} (also {@code JCCL_ALGO_ALLREDUCE}), ... for every operation. */
    private static java.util.Map<OpType, Algorithm> algorithmsFromEnvironment() {
        java.util.Map<OpType, Algorithm> m = new java.util.EnumMap<>(OpType.class);
        for (OpType op : OpType.values()) {
            String v = System.getenv(ALGORITHM_ENV_PREFIX + op.name());
            if (v == null) {
                v = System.getenv(ALGORITHM_ENV_PREFIX + op.name().replace("_", ""));
            }
            if (v != null && !v.isBlank()) {
                Algorithm a = Algorithm.parse(v);
                Algorithm.resolve(op, a); // rejects an algorithm the operation does not have
                m.put(op, a);
            }
        }
        return java.util.Collections.unmodifiableMap(m);
    }

    /** The algorithm {@code op} uses when a call asks for AUTO (per communicator; the environment sets it too). */
    public CommunicatorConfig withAlgorithm(OpType op, Algorithm algorithm) {
        Algorithm.resolve(op, algorithm);
        java.util.Map<OpType, Algorithm> m = new java.util.EnumMap<>(OpType.class);
        m.putAll(algorithms);
        m.put(op, algorithm);
        return new CommunicatorConfig(timeout, tracePrefix, java.util.Collections.unmodifiableMap(m));
    }

    /** {@code algorithm} for every operation that has it (the others keep their choice). */
    public CommunicatorConfig withAlgorithm(Algorithm algorithm) {
        CommunicatorConfig c = this;
        for (OpType op : OpType.values()) {
            if (Algorithm.available(op).contains(algorithm)) {
                c = c.withAlgorithm(op, algorithm);
            }
        }
        return c;
    }

    /** The communicator-wide choice for {@code op}, or AUTO. */
    public Algorithm algorithm(OpType op) {
        return algorithms.getOrDefault(op, Algorithm.AUTO);
    }

    /** Defaults, overridden by {@code -Djccl.timeout.ms} or {@code JCCL_TIMEOUT_MS}. */
    public static CommunicatorConfig fromEnvironment() {
        String trace = System.getProperty(TRACE_PROP_NAME, System.getenv(TRACE_ENV));
        if (trace != null && trace.isBlank()) {
            trace = null;
        }
        String v = System.getProperty(TIMEOUT_PROP_NAME, System.getenv(TIMEOUT_ENV));
        if (v == null || v.isBlank()) {
            return new CommunicatorConfig(TIMEOUT_DEFAULT, trace);
        }
        try {
            return new CommunicatorConfig(Duration.ofMillis(Long.parseLong(v.trim())), trace).validated();
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(TIMEOUT_ENV + " must be a whole number of milliseconds, got '" + v
                    + "'", e);
        }
    }

    public CommunicatorConfig withTimeout(Duration newTimeout) {
        return new CommunicatorConfig(Objects.requireNonNull(newTimeout, "timeout"), tracePrefix, algorithms)
                .validated();
    }

    /**
     * Writes the JSONL bandwidth trace: one record per operation to {@code <prefix>.rank<r>.jsonl}
     * (docs/trace.md); null switches it off.
     */
    public CommunicatorConfig withTrace(String prefix) {
        return new CommunicatorConfig(timeout, prefix, algorithms);
    }

    /** The trace prefix, or null when tracing is off. */
    public String tracePrefix() {
        return tracePrefix;
    }

    /** Default deadline of every call that does not set its own. */
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
