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

    private final Duration timeout;

    private CommunicatorConfig(Duration timeout) {
        this.timeout = timeout;
    }

    /** Defaults, overridden by {@code -Djccl.timeout.ms} or {@code JCCL_TIMEOUT_MS}. */
    public static CommunicatorConfig fromEnvironment() {
        String v = System.getProperty(TIMEOUT_PROP_NAME, System.getenv(TIMEOUT_ENV));
        if (v == null || v.isBlank()) {
            return new CommunicatorConfig(TIMEOUT_DEFAULT);
        }
        try {
            return new CommunicatorConfig(Duration.ofMillis(Long.parseLong(v.trim()))).validated();
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(TIMEOUT_ENV + " must be a whole number of milliseconds, got '" + v
                    + "'", e);
        }
    }

    public CommunicatorConfig withTimeout(Duration newTimeout) {
        return new CommunicatorConfig(Objects.requireNonNull(newTimeout, "timeout")).validated();
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
