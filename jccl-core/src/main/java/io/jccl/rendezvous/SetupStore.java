package io.jccl.rendezvous;

import io.jccl.JcclException;
import io.jccl.JcclSettings;
import io.jccl.store.Store;
import io.jccl.store.StoreException;

import java.time.Duration;

/**
 * The store as the transport set-up of {@link Rendezvous#connectTransport} sees it: a rank whose set-up fails
 * publishes "rank r: reason" ({@link #publishFailure}), and every wait for a key here ends within
 * {@link #SLICE_MILLIS} of it, failing with that rank and reason. Before, the host-mates of a rank whose shared-memory
 * set-up failed (a full /dev/shm) waited for its segment until the connect timeout, and said only that a key of a
 * host-local index was missing. The TCP transport's waits for its peers' connections, which wait for no key, read its
 * own address through this store as often, to the same end (TcpConnector.lookForFailure).
 */
final class SetupStore implements Store {
    /** Set by the first rank whose transport set-up fails: "rank r: reason". */
    static final String FAILED_KEY = "setup/failed";
    /** The longest a wait goes without looking for a published failure. */
    static final long SLICE_MILLIS = 100;

    private final Store inner;
    private final int rank;

    /** {@code inner} holds {@link #FAILED_KEY} (the job's store, under no other prefix); this is rank {@code rank}. */
    SetupStore(Store inner, int rank) {
        this.inner = inner;
        this.rank = rank;
    }

    /**
     * Publishes that rank {@code rank}'s set-up failed with {@code failure}, unless a failure is published already
     * (this rank's may follow from it); a failure to publish is added to {@code failure}.
     */
    static void publishFailure(Store store, int rank, Throwable failure) {
        try {
            if (!store.check(FAILED_KEY)) {
                String why = failure.getMessage() != null ? failure.getMessage() : failure.toString();
                String name = "rank " + rank;
                store.setString(FAILED_KEY, why.startsWith(name + ":") ? why : name + ": " + why);
            }
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    /** Throws, naming the rank at fault and its reason, where some rank has published that its set-up failed. */
    private void failIfFailed() {
        if (inner.check(FAILED_KEY)) {
            throw new JcclException("rank " + rank + ": the transports cannot be set up: "
                    + inner.getString(FAILED_KEY, Duration.ofSeconds(1)), null);
        }
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        long deadline = System.nanoTime() + JcclSettings.bounded(timeout).toNanos();
        while (true) {
            failIfFailed(); // a store that cannot be reached fails here, not at the deadline
            long start = System.nanoTime();
            long slice = Math.max(1, Math.min(deadline - start, SLICE_MILLIS * 1_000_000L));
            try {
                return inner.get(key, Duration.ofNanos(slice));
            } catch (StoreException e) {
                if (System.nanoTime() - start < slice / 2) {
                    throw e; // not the slice's timeout (which cannot come before it ends): the store's own failure
                }
                if (System.nanoTime() - deadline >= 0) {
                    failIfFailed();
                    throw new StoreException("rank " + rank + ": timed out after " + timeout.toMillis()
                            + " ms waiting for key '" + key + "'", e);
                }
            }
        }
    }

    @Override
    public void set(String key, byte[] value) {
        inner.set(key, value);
    }

    @Override
    public long add(String key, long delta) {
        return inner.add(key, delta);
    }

    @Override
    public boolean check(String key) {
        return inner.check(key);
    }

    @Override
    public boolean delete(String key) {
        return inner.delete(key);
    }

    /** Does not close the inner store, which belongs to the rendezvous. */
    @Override
    public void close() {
        // the inner store belongs to whoever made it
    }
}
