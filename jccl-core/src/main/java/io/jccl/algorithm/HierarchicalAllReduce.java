package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Allreduce across hosts in three phases, for H hosts of L ranks each (the transport's
 * {@link io.jccl.transport.Transport#hostOf layout}): a ring reduce-scatter among the L ranks of each host (over
 * shared memory), after which local rank i holds slice i of its host's sum; a ring allreduce of slice i among the H
 * ranks with local index i, one per host (over TCP), all L of them at once, so every host sends its share of the
 * minimum 2T(H-1)/H bytes in parallel; and a ring allgather of the finished slices within each host.
 *
 * <p>Steps: 2(L-1) within hosts and 2(H-1) between them. Bytes per rank: 2(T/L)(L-1) within its host, 2(T/L)(H-1)/H
 * over the network; per host 2T(H-1)/H over its link (a flat ring sends 2T(P-1)/P through the busiest link, 1.5T
 * at 2 x 2). The summation order is fixed by the layout, so results are identical on every rank and from run to
 * run for the same layout, and within the rigorous bound of any other order (not gloo's bits: gloo sums in
 * ring order over all P ranks).
 */
public final class HierarchicalAllReduce implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.ALL_REDUCE;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.HIERARCHICAL;
    }

    @Override
    public String unsupported(Topology topology) {
        return unsupportedHere(topology);
    }

    /** Why a hierarchical algorithm cannot run on {@code topology}, or null. */
    static String unsupportedHere(Topology topology) {
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

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allReduce(call, operands.data(), operands.reduceOp());
    }

    /**
     * 2(L-1) steps at the intra-host cost moving 2T(L-1)/L bytes per rank, then 2(H-1) steps at the inter-host cost
     * moving 2T(H-1)/H bytes through each host's link (its L ranks' shares together).
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int l = Math.max(1, topology.ranksPerHost());
        int h = topology.hosts();
        double t = bytes;
        return topology.intraHost(messages).micros(2 * (l - 1), 2 * t * (l - 1) / l)
                + messages.micros(2 * (h - 1), 2 * t * (h - 1) / h);
    }

    public static void allReduce(CollectiveCall call, Buf data, ReduceOp op) {
        HostLayout at = HostLayout.of(call);
        int l = at.local.length;
        int i = at.index;
        int[] slices = evenBounds(data.count(), l);
        // unsupportedHere guarantees several hosts of L >= 2 ranks each
        RingAllReduce.reduceScatterPhase(call.subgroup(at.local, 0), data, op, slices);
        Buf mine = data.slice(slices[i], slices[i + 1] - slices[i]);
        RingAllReduce.allReduce(call.subgroup(at.rail, 2 * (l - 1)), mine, op);
        RingAllReduce.allGatherPhase(call.subgroup(at.local, 2 * (l - 1) + 2 * (at.hosts() - 1)), data, slices, 0);
    }

    /** {@code parts + 1} bounds cutting {@code n} elements into {@code parts} slices differing by at most one. */
    static int[] evenBounds(int n, int parts) {
        int[] b = new int[parts + 1];
        for (int k = 0; k <= parts; k++) {
            b[k] = (int) ((long) n * k / parts);
        }
        return b;
    }
}
