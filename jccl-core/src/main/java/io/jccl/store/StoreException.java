package io.jccl.store;

import java.time.Duration;

/** A store operation failed: timed out waiting for a key, could not reach the server, or was refused. */
public final class StoreException extends RuntimeException {
    /** The key a get waited for in vain, or null where the failure is not a timeout. */
    private final String timedOutKey;

    public StoreException(String message) {
        this(message, null, null);
    }

    public StoreException(String message, Throwable cause) {
        this(message, cause, null);
    }

    private StoreException(String message, Throwable cause, String timedOutKey) {
        super(message, cause);
        this.timedOutKey = timedOutKey;
    }

    /**
     * What a get of {@code key} that waited {@code timeout} in vain throws: "timed out after T ms waiting for key
     * 'k'" and {@code where} (the store's location, or empty); {@code cause} may be null.
     */
    public static StoreException timedOut(String key, Duration timeout, String where, Throwable cause) {
        return new StoreException("timed out after " + timeout.toMillis() + " ms waiting for key '" + key + "'" + where,
                cause, key);
    }

    /**
     * As {@link #timedOut(String, Duration, String, Throwable)}, the message starting with {@code prefix} (such as
     * "rank 3: ").
     */
    public static StoreException timedOut(String prefix, String key, Duration timeout, Throwable cause) {
        return new StoreException(prefix + timedOut(key, timeout, "", null).getMessage(), cause, key);
    }

    /**
     * {@return the key whose get timed out, or null where this failure is not a timeout} A caller that knows whose
     * key it is (a rank's address, a rank's segment) can then name the rank that never published it.
     */
    public String timedOutKey() {
        return timedOutKey;
    }
}
