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
    /** Gets of this rank waiting for a key no round has brought yet; guarded by lock. */
    private int waiting;

    @Override
    public void set(String key, byte[] value) {
        known.set(key, value);
        synchronized (lock) {
            pending.put(key, value.clone());
            lock.notifyAll();
        }
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        if (known.check(key)) {
            return known.get(key, timeout);
        }
        synchronized (lock) {
            waiting++;
            lock.notifyAll();
        }
        try {
            return known.get(key, timeout);
        } finally {
            synchronized (lock) {
                waiting--;
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
     * Waits up to {@code millis} until this rank has something to publish or a get of its waits, or {@code done}
     * says the set-up finished: the moment a round is worth running.
     */
    void awaitActivity(long millis, java.util.function.BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        synchronized (lock) {
            while (pending.isEmpty() && waiting == 0 && !done.getAsBoolean()) {
                long left = (deadline - System.nanoTime()) / 1_000_000L;
                if (left <= 0) {
                    return;
                }
                lock.wait(Math.min(left, 5));
            }
        }
    }
}
