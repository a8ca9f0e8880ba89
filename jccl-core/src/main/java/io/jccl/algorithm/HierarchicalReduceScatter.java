package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Reduce_scatter across hosts, for H hosts of L ranks each, the reverse of {@link HierarchicalAllGather}: first
 * within each host, a ring reduce-scatter after which local rank i holds its host's partial sums of the blocks
 * of local index i on every host (H blocks); then between hosts, the H ranks with local index i (one per host)
 * ring-reduce-scatter those, so each ends with its own block summed over every rank. A host sends each of its L
 * ranks' H-1 foreign blocks once: T(H-1)/H over its link, the minimum (a flat ring: T(P-1)/P through the busiest
 * link, 3T/4 at 2 x 2). T is the input's bytes. The order of the additions is fixed by the layout.
 */
public final class HierarchicalReduceScatter implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.REDUCE_SCATTER;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.HIERARCHICAL;
    }

    @Override
    public String unsupported(Topology topology) {
        return HierarchicalAllReduce.unsupportedHere(topology);
    }

    /** L-1 steps within hosts moving T(L-1)/L per rank, then H-1 steps moving T(H-1)/H through each host's link. */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int h = topology.hosts();
        int l = Math.max(1, topology.ranksPerHost());
        double t = (double) bytes * topology.world();
        return topology.intraHost(messages).micros(l - 1, t * (l - 1) / l) + messages.micros(h - 1, t * (h - 1) / h);
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        Buf output = operands.output();
        int c = output.count();
        int r = call.rank();
        int[] hostOf = call.hostOf();
        int hosts = HierarchicalAllReduce.hosts(hostOf);
        int[] local = HierarchicalAllReduce.ranksOn(hostOf, hostOf[r]);
        int l = local.length;
        int i = java.util.Arrays.binarySearch(local, r);
        int[][] byHost = new int[hosts][];
        int[] rail = new int[hosts];
        for (int h = 0; h < hosts; h++) {
            byHost[h] = HierarchicalAllReduce.ranksOn(hostOf, h);
            rail[h] = byHost[h][i];
        }
        Buf work = call.scratchCopy(operands.input()); // the input stays as it was (and may hold the output)
        int[][] hostGroups = new int[l][hosts]; // local rank k gathers the sums of the blocks of local index k
        for (int k = 0; k < l; k++) {
            for (int h = 0; h < hosts; h++) {
                hostGroups[k][h] = byHost[h][k] * c;
            }
        }
        ring(call.subgroup(local, 0), work, hostGroups, c, operands.reduceOp(), "within the host");
        int[][] railGroups = new int[hosts][];
        for (int h = 0; h < hosts; h++) {
            railGroups[h] = new int[] {rail[h] * c};
        }
        ring(call.subgroup(rail, l - 1), work, railGroups, c, operands.reduceOp(), "across hosts");
        work.copyTo(r * c, output, 0, c);
        call.releaseScratch(work);
    }

    /**
     * A ring reduce-scatter on {@code group}: its rank k ends with the blocks at {@code groups[k]} (offsets into
     * {@code data}, {@code c} elements each) reduced over every member. At step s rank k sends its partial sums of
     * group k - s - 1 to k + 1 and reduces group k - s - 2 from k - 1 into its own, every receive posted first.
     */
    private static void ring(CollectiveCall group, Buf data, int[][] groups, int c, ReduceOp op, String phase) {
        int n = group.size();
        int k = group.rank();
        for (int s = 0; s < n - 1; s++) {
            group.step(s, phase);
            int[] out = groups[((k - s - 1) % n + n) % n];
            int[] in = groups[((k - s - 2) % n + n) % n];
            CollectiveCall.Receive[] posted = new CollectiveCall.Receive[in.length];
            for (int b = 0; b < in.length; b++) {
                posted[b] = group.postRecv((k - 1 + n) % n, data.slice(in[b], c), op);
            }
            for (int at : out) {
                group.send((k + 1) % n, data.slice(at, c));
            }
            for (CollectiveCall.Receive p : posted) {
                group.complete(p);
            }
        }
    }
}
