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

    private final Duration timeout;
    private final String tracePrefix;

    private CommunicatorConfig(Duration timeout, String tracePrefix) {
        this.timeout = timeout;
        this.tracePrefix = tracePrefix;
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
        return new CommunicatorConfig(Objects.requireNonNull(newTimeout, "timeout"), tracePrefix).validated();
    }

    /**
     * Writes the JSONL bandwidth trace: one record per operation to {@code <prefix>.rank<r>.jsonl}
     * (docs/trace.md); null switches it off.
     */
    public CommunicatorConfig withTrace(String prefix) {
        return new CommunicatorConfig(timeout, prefix);
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
