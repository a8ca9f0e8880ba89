package io.jccl.algorithm;

import io.jccl.Algorithm;

/**
 * What the {@link Algorithm#HIERARCHICAL} algorithms have in common as algorithm objects: they need a layout of
 * several hosts with as many ranks on each, as the transport knows it ({@link Topology#hostOf()}).
 */
abstract class HierarchicalAlgorithm implements CollectiveAlgorithm {

    @Override
    public final Algorithm algorithm() {
        return Algorithm.HIERARCHICAL;
    }

    /** Why a hierarchical algorithm cannot run on {@code topology}, or null. */
    @Override
    public String unsupported(Topology topology) {
        if (!topology.multiHost()) {
            return "algorithm HIERARCHICAL needs ranks on several hosts, several on some host, in a layout the "
                    + "transport knows (the " + topology.transport() + " transport of " + topology.world()
                    + " ranks on " + (topology.hostOf() == null ? "unknown hosts" : topology.hosts() + " host(s)")
                    + ")";
        }
        if (topology.ranksPerHost() == 0) {
            return "algorithm HIERARCHICAL needs as many ranks on every host";
        }
        return null;
    }

    /**
     * Whether a call's phases within a host can go through the host's shared arena ({@link io.jccl.step.CollectiveCall#hostArena}):
     * the transport has one and each exchange buffer holds at least one element of the call's type for each of the
     * {@code blocks} blocks of a round ({@link #perBlock}). It depends on nothing a rank chooses alone, so it is the
     * same on every rank: the hosts' arenas have rank 0's size, and the arenas copy arrays and direct buffers alike
     * (one rank's tensor over memory and another's array in the same call take the same path).
     */
    static boolean throughHostArena(io.jccl.step.CollectiveCall call, int blocks, io.jccl.buffer.Buf operand) {
        io.jccl.transport.SharedArena a = call.hostArena();
        return a != null && perBlock(a, blocks, operand) >= 1;
    }

    /**
     * How many elements of each of {@code blocks} blocks of {@code operand}'s type an exchange buffer of {@code a}
     * holds in a round: the size of the rounds of a phase within a host through the arena. At least 1 where
     * {@link #throughHostArena} chose the arena; below, {@link SharedRounds#run} fails saying so.
     */
    static int perBlock(io.jccl.transport.SharedArena a, int blocks, io.jccl.buffer.Buf operand) {
        return a.bufferBytes() / operand.dtype().sizeBytes() / blocks;
    }
}
