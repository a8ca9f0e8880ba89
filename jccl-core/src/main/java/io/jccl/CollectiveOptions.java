package io.jccl;

import java.time.Duration;
import java.util.Objects;

/**
 * Per-call options: the algorithm and the deadline. Immutable; {@link #DEFAULT} uses AUTO and the communicator's
 * timeout.
 */
public final class CollectiveOptions {
    /** AUTO (the communicator's configured choice, else the cost model's) and the communicator's timeout. */
    public static final CollectiveOptions DEFAULT = new CollectiveOptions(Algorithm.AUTO, null);

    private final Algorithm algorithm;
    private final Duration timeout;

    private CollectiveOptions(Algorithm algorithm, Duration timeout) {
        this.algorithm = algorithm;
        this.timeout = timeout;
    }

    /** {@return {@link #DEFAULT}} */
    public static CollectiveOptions defaults() {
        return DEFAULT;
    }

    /**
     * The algorithm of the call; it must be one the operation has ({@link Algorithm#available}), else the call
     * raises an {@link IllegalArgumentException}. Every rank must ask for the same one.
     *
     * @param newAlgorithm the algorithm, or {@link Algorithm#AUTO}
     * @return a copy of these options with that algorithm
     */
    public CollectiveOptions withAlgorithm(Algorithm newAlgorithm) {
        return new CollectiveOptions(Objects.requireNonNull(newAlgorithm, "algorithm"), timeout);
    }

    /**
     * The whole call must finish within this time; every receive waits at most until then.
     *
     * @param newTimeout a positive duration
     * @return a copy of these options with that deadline
     * @throws IllegalArgumentException if {@code newTimeout} is zero or negative
     */
    public CollectiveOptions withTimeout(Duration newTimeout) {
        Objects.requireNonNull(newTimeout, "timeout");
        if (newTimeout.isNegative() || newTimeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: timeout=" + newTimeout);
        }
        return new CollectiveOptions(algorithm, JcclSettings.bounded(newTimeout));
    }

    /** {@return the algorithm asked for; {@link Algorithm#AUTO} by default} */
    public Algorithm algorithm() {
        return algorithm;
    }

    /** {@return the per-call timeout, or null to use the communicator's} */
    public Duration timeout() {
        return timeout;
    }
}
