package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.step.CollectiveCall;

/**
 * Broadcast across hosts: the binomial tree of {@link BinomialTreeBroadcast} (segmented and pipelined) over the
 * ranks ordered with the host in the low digits, v = l H + h for the l-th rank of the h-th host (both counted from
 * the root's), so the tree's first ceil(log2 H) levels go from host to host, one rank of each, and the rest stay
 * within hosts (over shared memory). A flat tree over consecutive ranks sends the buffer over the root host's link
 * once per child on another host (twice at 2 x 2); this sends it once per level across hosts (once at 2 hosts).
 * The call is checked first as the hierarchical barrier checks it ({@code HostLeaders}: three steps, one of them
 * across hosts) rather than by the flat tree's ring and dissemination rounds (1 + ceil(log2 P) steps across hosts).
 */
public final class HierarchicalBroadcast extends HierarchicalAlgorithm {
    @Override
    public OpType operation() {
        return OpType.BROADCAST;
    }

    @Override
    public String unsupported(Topology topology) {
        String why = super.unsupported(topology);
        if (why == null && !LinkCost.isPow2(topology.hosts())) { // then the tree's first levels span the hosts
            return "algorithm HIERARCHICAL broadcast needs a power-of-two number of hosts, not " + topology.hosts();
        }
        return why;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        HostLayout at = HostLayout.of(call);
        int root = operands.root();
        int hosts = at.hosts();
        int rootHost = call.hostOf()[root];
        int rootLocal = java.util.Arrays.binarySearch(at.byHost[rootHost], root);
        int l = at.local.length;
        int[] order = new int[call.size()];
        for (int h = 0; h < hosts; h++) {
            int[] on = at.byHost[(rootHost + h) % hosts];
            for (int k = 0; k < l; k++) {
                order[k * hosts + h] = on[(rootLocal + k) % l];
            }
        }
        BinomialTreeBroadcast.tree(call, operands.data(), order, HostLeaders.agree(call, 0));
    }

    /**
     * The signature check (not counted, as for the flat tree), then ceil(log2 H) levels across hosts, each carrying
     * T over a host's link, and ceil(log2 L) levels within hosts at the intra-host cost.
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        double across = LinkCost.log2Ceil(topology.hosts());
        double within = LinkCost.log2Ceil(Math.max(1, topology.ranksPerHost()));
        double t = bytes;
        return messages.micros(across, t * across) + topology.intraHost(messages).micros(within, t * within);
    }
}
