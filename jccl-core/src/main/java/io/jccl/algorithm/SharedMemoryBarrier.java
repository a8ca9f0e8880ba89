package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.step.CollectiveCall;
import io.jccl.transport.SharedArena;

/**
 * Barrier through memory every rank can read ({@link SharedArena}): one round in which every rank publishes its
 * signature and arrival, rank 0 waits for everyone's and releases the others, and every rank then compares every
 * rank's signature ({@link CollectiveCall#arriveReleased}). No rank leaves before every rank has entered; rank 0
 * leaves first, so that a rooted call after the barrier has its root's data out by the time a descheduled rank runs
 * again. Cost: {@link #predictMicros}.
 */
public final class SharedMemoryBarrier extends SharedMemoryAlgorithm {
    @Override
    public OpType operation() {
        return OpType.BARRIER;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        barrier(call);
    }

    /** One synchronisation, no bytes. */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        return arenaMicros(topology, arena, 1, 0);
    }

    public static void barrier(CollectiveCall call) {
        SharedArena a = call.arena();
        call.arriveReleased(a, SharedRounds.begin(call, a), 0);
    }
}
