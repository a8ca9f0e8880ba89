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
        int[] hostOf = call.hostOf();
        int r = call.rank();
        int[] local = ranksOn(hostOf, hostOf[r]);
        int l = local.length;
        int i = indexOf(local, r);
        int hosts = hosts(hostOf);
        int[] rail = new int[hosts];
        for (int h = 0; h < hosts; h++) {
            rail[h] = ranksOn(hostOf, h)[i];
        }
        int[] slices = evenBounds(data.count(), l);
        // unsupportedHere guarantees several hosts of L >= 2 ranks each
        RingAllReduce.reduceScatterPhase(call.subgroup(local, 0), data, op, slices);
        Buf mine = data.slice(slices[i], slices[i + 1] - slices[i]);
        RingAllReduce.allReduce(call.subgroup(rail, 2 * (l - 1)), mine, op);
        RingAllReduce.allGatherPhase(call.subgroup(local, 2 * (l - 1) + 2 * (hosts - 1)), data, slices, 0);
    }

    /** The number of hosts of the layout. */
    static int hosts(int[] hostOf) {
        int hosts = 0;
        for (int x : hostOf) {
            hosts = Math.max(hosts, x + 1);
        }
        return hosts;
    }

    /** The ranks on host {@code h}, in increasing order. */
    static int[] ranksOn(int[] hostOf, int h) {
        int n = 0;
        for (int x : hostOf) {
            n += x == h ? 1 : 0;
        }
        int[] ranks = new int[n];
        int k = 0;
        for (int r = 0; r < hostOf.length; r++) {
            if (hostOf[r] == h) {
                ranks[k++] = r;
            }
        }
        return ranks;
    }

    private static int indexOf(int[] a, int v) {
        for (int k = 0; k < a.length; k++) {
            if (a[k] == v) {
                return k;
            }
        }
        throw new IllegalArgumentException(v + " not in " + java.util.Arrays.toString(a));
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
