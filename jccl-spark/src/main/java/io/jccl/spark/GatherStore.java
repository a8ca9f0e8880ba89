package io.jccl.spark;

import io.jccl.store.InMemoryStore;
import io.jccl.store.Store;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The store jccl's transports meet through, carried by rounds of {@link AllGather}: a key this rank sets waits in
 * {@link #drain()} for the next round, which {@link BarrierRendezvous} runs on the task's thread; the keys every
 * rank published in a round are {@link #merge merged} into this rank's copy, where blocked {@link #get}s find them.
 * Counters ({@link #add}) are not supported: no rank can add atomically to a value others hold, and the transports'
 * set-up uses none.
 */
final class GatherStore implements Store {
    private final InMemoryStore known = new InMemoryStore();
    private final Object lock = new Object();
    /** Keys set since the last round, in order; guarded by lock. */
    private final Map<String, byte[]> pending = new LinkedHashMap<>();
    /** The keys gets of this rank wait for, with how many gets wait for each; guarded by lock. */
    private final Map<String, Integer> awaited = new java.util.HashMap<>();
    /** When this rank last set a key; guarded by lock. */
    private long lastSetNanos;

    @Override
    public void set(String key, byte[] value) {
        known.set(key, value);
        synchronized (lock) {
            pending.put(key, value.clone());
            lastSetNanos = System.nanoTime();
            lock.notifyAll();
        }
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        if (known.check(key)) {
            return known.get(key, timeout);
        }
        synchronized (lock) {
            awaited.merge(key, 1, Integer::sum);
            lock.notifyAll();
        }
        try {
            return known.get(key, timeout);
        } finally {
            synchronized (lock) {
                awaited.computeIfPresent(key, (k, n) -> n == 1 ? null : n - 1);
            }
        }
    }

    @Override
    public long add(String key, long delta) {
        throw new UnsupportedOperationException("a store carried by BarrierTaskContext.allGather has no atomic "
                + "counters (add '" + key + "')");
    }

    @Override
    public boolean check(String key) {
        return known.check(key);
    }

    @Override
    public boolean delete(String key) {
        return known.delete(key);
    }

    @Override
    public void close() {
        // nothing held
    }

    /** The keys set since the last call, to publish in the next round. */
    Map<String, byte[]> drain() {
        synchronized (lock) {
            Map<String, byte[]> out = new LinkedHashMap<>(pending);
            pending.clear();
            return out;
        }
    }

    /** Keys another rank published: gets waiting for them return. */
    void merge(Map<String, byte[]> entries) {
        for (Map.Entry<String, byte[]> e : entries.entrySet()) {
            known.set(e.getKey(), e.getValue());
        }
    }

    /**
     * Waits until a round is worth running, or {@code idleMillis} at most: until a get of this rank waits for a key
     * no round has brought, or {@code done} says the set-up ended, or the keys this rank set have settled (none
     * set for {@code settleMillis}: a set-up that sets two keys in a row publishes both in one round).
     */
    void awaitActivity(long idleMillis, long settleMillis, java.util.function.BooleanSupplier done)
            throws InterruptedException {
        long deadline = System.nanoTime() + idleMillis * 1_000_000L;
        synchronized (lock) {
            while (!done.getAsBoolean() && !waitsForUnknownKey()
                    && (pending.isEmpty() || System.nanoTime() - lastSetNanos < settleMillis * 1_000_000L)) {
                long left = (deadline - System.nanoTime()) / 1_000_000L;
                if (left <= 0) {
                    return;
                }
                lock.wait(Math.min(left, 2));
            }
        }
    }

    /** Whether a get waits for a key this rank does not know yet; the caller holds lock. */
    private boolean waitsForUnknownKey() {
        for (String k : awaited.keySet()) {
            if (!known.check(k)) {
                return true;
            }
        }
        return false;
    }
}
