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
     * the transport has one, each exchange buffer holds at least {@code elementsPerRound} elements of {@code b}'s
     * type (one per block of a round), and no operand lies outside the Java heap (the arenas copy to and from
     * arrays; a direct buffer's call goes through messages instead). The same on every rank: the hosts' arenas have
     * rank 0's size, and the operands' kind is the call's.
     */
    static boolean throughHostArena(io.jccl.step.CollectiveCall call, int elementsPerRound, io.jccl.buffer.Buf... operands) {
        io.jccl.transport.SharedArena a = call.hostArena();
        if (a == null || a.bufferBytes() / operands[0].dtype().sizeBytes() < elementsPerRound) {
            return false;
        }
        for (io.jccl.buffer.Buf b : operands) {
            if (b.isMemory()) {
                return false;
            }
        }
        return true;
    }
}
