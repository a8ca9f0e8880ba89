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
}
