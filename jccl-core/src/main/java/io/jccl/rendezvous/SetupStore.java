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
final class SetupStore extends io.jccl.store.ForwardingStore {
    /** Set by the first rank whose transport set-up fails: "rank r: reason". */
    static final String FAILED_KEY = "setup/failed";
    /** The longest a wait goes without looking for a published failure. */
    static final long SLICE_MILLIS = 100;

    private final int rank;

    /** {@code inner} holds {@link #FAILED_KEY} (the job's store, under no other prefix); this is rank {@code rank}. */
    SetupStore(Store inner, int rank) {
        super(inner);
        this.rank = rank;
    }

    /**
     * Publishes that this rank's set-up failed with {@code failure} ("rank r: reason"), unless the failure is one this
     * store raised, or caused by one: another rank's published failure, or a wait for a key that timed out (the rank
     * at fault there is the one whose key never came, which each waiting rank names itself). The first failing rank
     * claims the key atomically where the store can count (two ranks failing at once would otherwise both write it,
     * and ranks could read different culprits). A failure to publish is added to {@code failure}.
     */
    void publishFailure(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (raised.contains(t)) {
                return;
            }
        }
        try {
            boolean first;
            try {
                first = inner.add(FAILED_KEY + "/claims", 1) == 1;
            } catch (UnsupportedOperationException e) { // a store that cannot count: the first that looks
                first = !inner.check(FAILED_KEY);
            }
            if (first) {
                String why = failure.getMessage() != null ? failure.getMessage() : failure.toString();
                String name = "rank " + rank;
                inner.setString(FAILED_KEY, why.startsWith(name + ":") ? why : name + ": " + why);
            }
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    /** The failures this store raised (by identity): they are not this rank's to publish. */
    private final java.util.Set<Throwable> raised = java.util.Collections.newSetFromMap(
            java.util.Collections.synchronizedMap(new java.util.IdentityHashMap<>()));

    /** {@code t}, remembered as raised here. */
    private <T extends RuntimeException> T raise(T t) {
        raised.add(t);
        return t;
    }

    /** Throws, naming the rank at fault and its reason, where some rank has published that its set-up failed. */
    private void failIfFailed() {
        if (inner.check(FAILED_KEY)) {
            throw raise(new JcclException("rank " + rank + ": the transports cannot be set up: "
                    + inner.getString(FAILED_KEY, Duration.ofSeconds(1)), null));
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
                    throw raise(StoreException.timedOut("rank " + rank + ": ", key, timeout, e));
                }
            }
        }
    }

    /** Does not close the inner store, which belongs to the rendezvous. */
    @Override
    public void close() {
        // the inner store belongs to whoever made it
    }
}
