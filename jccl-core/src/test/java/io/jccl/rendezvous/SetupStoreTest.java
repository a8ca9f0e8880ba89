package io.jccl.rendezvous;

import io.jccl.JcclException;
import io.jccl.store.InMemoryStore;
import io.jccl.store.StoreException;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a rank's failed set-up publishes: its own failures, never those the set-up store raised. */
class SetupStoreTest {

    /**
     * A rank whose wait for another rank's key timed out published "rank r: timed out ... waiting for key ..." as the
     * job's set-up failure, so every other rank then failed blaming it (a live rank) for the one that never came.
     */
    @Test
    void aWaitThatTimedOutIsNotPublished() {
        InMemoryStore store = new InMemoryStore();
        SetupStore rank1 = new SetupStore(store, 1);
        StoreException timedOut = assertThrows(StoreException.class, () -> rank1.get("tcp/addr/3",
                Duration.ofMillis(150)));
        rank1.publishFailure(timedOut);
        rank1.publishFailure(new IllegalStateException("rank 1: cannot connect", timedOut)); // wrapped, as callers do
        assertFalse(store.check(SetupStore.FAILED_KEY), "a timeout was published");
    }

    /** The first failure is the job's; a rank failing from it, or after it, does not replace it. */
    @Test
    void theFirstRanksOwnFailureIsPublishedOnce() {
        InMemoryStore store = new InMemoryStore();
        SetupStore rank1 = new SetupStore(store, 1);
        SetupStore rank2 = new SetupStore(store, 2);
        rank1.publishFailure(new IllegalStateException("no space left on device"));
        assertEquals("rank 1: no space left on device", store.getString(SetupStore.FAILED_KEY, Duration.ofSeconds(1)));
        JcclException told = assertThrows(JcclException.class, () -> rank2.get("shm/segment/1", Duration.ofSeconds(30)));
        assertTrue(told.getMessage().contains("rank 2: the transports cannot be set up: rank 1: no space left"),
                told.getMessage());
        rank2.publishFailure(told);
        rank2.publishFailure(new IllegalStateException("rank 2: something else"));
        assertEquals("rank 1: no space left on device", store.getString(SetupStore.FAILED_KEY, Duration.ofSeconds(1)));
    }
}
