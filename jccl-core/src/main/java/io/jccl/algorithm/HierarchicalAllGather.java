package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Allgather across hosts, for H hosts of L ranks each: first between hosts, the H ranks with local index i (one
 * per host) ring-allgather their own blocks, all L rings of a host at once, so a host sends each of its L blocks
 * to every other host once: T(H-1)/H over its link, the minimum (a flat ring sends T(P-1)/P through the busiest
 * link: 3T/4 at 2 x 2); then within each host, a ring allgather in which local rank i passes on the H blocks it
 * holds (those of local index i on every host). T is the output's bytes.
 */
public final class HierarchicalAllGather implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.ALL_GATHER;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.HIERARCHICAL;
    }

    @Override
    public String unsupported(Topology topology) {
        return HierarchicalAllReduce.unsupportedHere(topology);
    }

    /** H-1 steps across hosts moving T(H-1)/H through each host's link, then L-1 steps within hosts. */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int h = topology.hosts();
        int l = Math.max(1, topology.ranksPerHost());
        double t = (double) bytes * topology.world();
        return messages.micros(h - 1, t * (h - 1) / h) + topology.intraHost(messages).micros(l - 1, t * (l - 1) / l);
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        Buf input = operands.input();
        Buf output = operands.output();
        int c = input.count();
        int r = call.rank();
        input.copyTo(output, r * c);
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
        // between hosts: sub-rank h of the rail holds the block of rail[h]
        int[][] railBlocks = new int[hosts][];
        for (int h = 0; h < hosts; h++) {
            railBlocks[h] = new int[] {rail[h] * c};
        }
        ring(call.subgroup(rail, 0), output, railBlocks, c, "across hosts");
        // within the host: local rank k holds the blocks of local index k of every host
        int[][] hostBlocks = new int[l][hosts];
        for (int k = 0; k < l; k++) {
            for (int h = 0; h < hosts; h++) {
                hostBlocks[k][h] = byHost[h][k] * c;
            }
        }
        ring(call.subgroup(local, hosts - 1), output, hostBlocks, c, "within the host");
    }

    /**
     * A ring allgather on {@code group}: its rank k starts with the blocks at {@code blocks[k]} (offsets into
     * {@code data}, {@code c} elements each); at step s it sends the blocks of rank k - s to k + 1 and receives
     * those of k - s - 1 from k - 1, every receive posted before the sends.
     */
    private static void ring(CollectiveCall group, Buf data, int[][] blocks, int c, String phase) {
        int n = group.size();
        int k = group.rank();
        for (int s = 0; s < n - 1; s++) {
            group.step(s, phase);
            int[] out = blocks[((k - s) % n + n) % n];
            int[] in = blocks[((k - s - 1) % n + n) % n];
            CollectiveCall.Receive[] posted = new CollectiveCall.Receive[in.length];
            for (int b = 0; b < in.length; b++) {
                posted[b] = group.postRecv((k - 1 + n) % n, data.slice(in[b], c), null);
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
