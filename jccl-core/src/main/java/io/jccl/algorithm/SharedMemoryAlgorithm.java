package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.step.CollectiveCall;

/**
 * What the {@link Algorithm#SHARED_MEMORY} algorithms have in common as algorithm objects: they need the
 * transport's shared arena, hold it for the call ({@link io.jccl.transport.SharedArena#enter()}), and are
 * modelled with the arena's cost parameters.
 */
abstract class SharedMemoryAlgorithm implements CollectiveAlgorithm {

    @Override
    public final Algorithm algorithm() {
        return Algorithm.SHARED_MEMORY;
    }

    @Override
    public final String unsupported(Topology topology) {
        if (topology.arena()) {
            return null;
        }
        return "algorithm SHARED_MEMORY needs ranks that share memory (threads, or the shm transport) and the world "
                + "communicator; this one runs over " + topology.transport()
                + (topology.subGroup() ? " as a sub-group" : "");
    }

    /** One round of the arena, which a small call's first arrival begins. */
    @Override
    public final boolean startsLate() {
        return true;
    }

    @Override
    public final void begin(CollectiveCall call) {
        call.arena().enter();
    }

    @Override
    public final void end(CollectiveCall call) {
        call.arena().exit();
    }

    /**
     * {@code steps} synchronisations copying {@code bytes} bytes through {@code arena}; 1 on one rank, where there
     * is nothing to do and the message algorithms (which cost nothing there) are preferred.
     */
    static double arenaMicros(Topology topology, LinkCost arena, double steps, double bytes) {
        return topology.world() == 1 ? 1 : arena.micros(steps, bytes);
    }

    /** The rounds a call of {@code bytes} takes: one exchange buffer each, at least one. */
    static double rounds(double bytes, Topology topology) {
        return Math.max(1, Math.ceil(bytes / topology.arenaBytes()));
    }
}
