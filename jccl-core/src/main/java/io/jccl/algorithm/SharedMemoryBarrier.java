package io.jccl.algorithm;

import io.jccl.step.CollectiveCall;
import io.jccl.transport.SharedArena;

/**
 * Barrier through memory every rank can read ({@link SharedArena}): one round in which every rank publishes its
 * signature and arrival and waits for everyone else's. No rank leaves before every rank has entered.
 */
public final class SharedMemoryBarrier {
    private SharedMemoryBarrier() {
    }

    public static void barrier(CollectiveCall call) {
        SharedArena a = call.arena();
        call.arrive(a, a.nextRound(), true);
    }
}
