package io.jccl.transport;

import io.jccl.JcclException;
import io.jccl.store.StoreException;

import java.time.Duration;

/**
 * A transport's set-up waits in the store for keys its peers publish (an address, a segment, a job's name): a wait
 * that timed out names the rank that never published, where the store's own message names only a key.
 */
public final class SetUpTimeouts {
    private SetUpTimeouts() {
    }

    /**
     * What rank {@code rank}'s set-up throws when a store's get of a key that rank {@code peer} publishes failed with
     * {@code e}: a timeout ({@link StoreException#timedOutKey()} not null) becomes "rank R: rank P{@code didNot}
     * within T ms (it stopped, failed before, or was never started)", with {@code e} as its cause; any other failure
     * of the store is {@code e} itself. {@code didNot} follows the peer's rank, as in " did not publish its TCP
     * address" or ", on this host, did not name the shared-memory job"; {@code timeout} is the wait's whole limit.
     */
    public static RuntimeException namingPeer(StoreException e, int rank, int peer, String didNot,
                                              Duration timeout) {
        if (e.timedOutKey() == null) {
            return e;
        }
        return new JcclException("rank " + rank + ": rank " + peer + didNot + " within " + timeout.toMillis()
                + " ms (it stopped, failed before, or was never started)", e);
    }
}
