package io.jccl;

import java.time.Duration;
import java.util.Objects;

/**
 * Per-call options: the algorithm and the deadline. Immutable; {@link #DEFAULT} uses AUTO and the communicator's
 * timeout.
 */
public final class CollectiveOptions {
    public static final CollectiveOptions DEFAULT = new CollectiveOptions(Algorithm.AUTO, null);

    private final Algorithm algorithm;
    private final Duration timeout;

    private CollectiveOptions(Algorithm algorithm, Duration timeout) {
        this.algorithm = algorithm;
        this.timeout = timeout;
    }

    public static CollectiveOptions defaults() {
        return DEFAULT;
    }

    public CollectiveOptions withAlgorithm(Algorithm newAlgorithm) {
        return new CollectiveOptions(Objects.requireNonNull(newAlgorithm, "algorithm"), timeout);
    }

    /** The whole call must finish within this time; every receive waits at most until then. */
    public CollectiveOptions withTimeout(Duration newTimeout) {
        Objects.requireNonNull(newTimeout, "timeout");
        if (newTimeout.isNegative() || newTimeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: timeout=" + newTimeout);
        }
        return new CollectiveOptions(algorithm, newTimeout);
    }

    public Algorithm algorithm() {
        return algorithm;
    }

    /** The per-call timeout, or null to use the communicator's. */
    public Duration timeout() {
        return timeout;
    }
}
