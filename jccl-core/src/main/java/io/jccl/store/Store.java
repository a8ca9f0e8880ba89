package io.jccl.store;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A key-value store the ranks of a job meet through (torch's {@code Store}): set, get (waiting until the key
 * exists), add (atomic counter), check and delete. Implementations: {@link InMemoryStore} (threads),
 * {@link FileStore} (a shared directory), {@link TcpStore} (a server in rank 0 or standalone), and
 * {@link PrefixStore} (a namespace over another store).
 */
public interface Store extends AutoCloseable {

    void set(String key, byte[] value);

    /**
     * The value of {@code key}, waiting until some rank sets it.
     *
     * @throws StoreException if {@code timeout} passes first (the message names the key)
     */
    byte[] get(String key, Duration timeout);

    /** Adds {@code delta} to the counter at {@code key} (0 if absent) and returns the new value. */
    long add(String key, long delta);

    /** Whether {@code key} is set. */
    boolean check(String key);

    /** Removes {@code key}; returns whether it was set. */
    boolean delete(String key);

    /**
     * Waits until every key is set.
     *
     * @throws StoreException naming the first key still missing when {@code timeout} passes
     */
    default void waitFor(java.util.List<String> keys, Duration timeout) {
        long deadline = System.nanoTime() + io.jccl.JcclSettings.bounded(timeout).toNanos();
        for (String k : keys) {
            get(k, Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
        }
    }

    default void setString(String key, String value) {
        set(key, value.getBytes(StandardCharsets.UTF_8));
    }

    default String getString(String key, Duration timeout) {
        return new String(get(key, timeout), StandardCharsets.UTF_8);
    }

    @Override
    void close();
}
