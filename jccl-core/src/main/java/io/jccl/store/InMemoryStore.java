package io.jccl.store;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/** A store for ranks that are threads of one JVM; also the table behind {@link TcpStoreServer}. */
public final class InMemoryStore implements Store {
    private final Map<String, byte[]> values = new HashMap<>();

    @Override
    public synchronized void set(String key, byte[] value) {
        values.put(key, value.clone());
        notifyAll();
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        byte[] v = await(key, io.jccl.JcclSettings.bounded(timeout).toNanos());
        if (v == null) {
            throw timedOut(key, timeout);
        }
        return v;
    }

    /** The value of {@code key}, waiting at most {@code nanos} until some rank sets it; null if none did. */
    synchronized byte[] await(String key, long nanos) {
        long deadline = System.nanoTime() + nanos;
        byte[] v;
        while ((v = values.get(key)) == null) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            try {
                wait(Math.max(1, left / 1_000_000), 0);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new StoreException("interrupted waiting for key '" + key + "'", e);
            }
        }
        return v.clone();
    }

    /** What a get of {@code key} that waited {@code timeout} in vain throws. */
    static StoreException timedOut(String key, Duration timeout) {
        return StoreException.timedOut(key, timeout, "", null);
    }

    @Override
    public synchronized long add(String key, long delta) {
        byte[] old = values.get(key);
        long v = (old == null ? 0 : Long.parseLong(new String(old, java.nio.charset.StandardCharsets.UTF_8))) + delta;
        values.put(key, Long.toString(v).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        notifyAll();
        return v;
    }

    @Override
    public synchronized boolean check(String key) {
        return values.containsKey(key);
    }

    @Override
    public synchronized boolean delete(String key) {
        return values.remove(key) != null;
    }

    @Override
    public void close() {
        // nothing held
    }
}
