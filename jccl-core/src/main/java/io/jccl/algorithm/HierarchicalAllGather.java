package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Allgather across hosts, for H hosts of L ranks each: first between hosts, the H ranks with local index i (one
 * per host) ring-allgather their own blocks, all L rings of a host at once, so a host sends each of its L blocks
 * to every other host once: T(H-1)/H over its link, the minimum (a flat ring sends T(P-1)/P through the busiest
 * link: 3T/4 at 2 x 2); then within each host, a ring allgather in which local rank i passes on the H blocks it
 * holds (those of local index i on every host). T is the output's bytes. From 2 {@link HostPipeline#CHUNK_BYTES}
 * of output up, where the link between hosts is the limit ({@link Topology#overlapsHosts}), pipelined
 * ({@link HostPipeline}): piece j of every block crosses the hosts on a second thread while the host passes on
 * piece j - 1.
 */
public final class HierarchicalAllGather extends HierarchicalAlgorithm {
    @Override
    public OpType operation() {
        return OpType.ALL_GATHER;
    }

    /** H-1 steps across hosts moving T(H-1)/H through each host's link, then L-1 steps within hosts. */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int h = topology.hosts();
        int l = Math.max(1, topology.ranksPerHost());
        double t = (double) bytes * topology.world();
        return HostPipeline.micros(topology.intraHost(messages).micros(l - 1, t * (l - 1) / l),
                messages.micros(h - 1, t * (h - 1) / h), (long) t, topology, messages);
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        Buf input = operands.input();
        Buf output = operands.output();
        int c = input.count();
        int r = call.rank();
        input.copyTo(output, r * c);
        HostLayout at = HostLayout.of(call);
        int hosts = at.hosts();
        int l = at.local.length;
        int[][] railBlocks = new int[hosts][]; // between hosts: member h of the rail holds the block of rail[h]
        for (int h = 0; h < hosts; h++) {
            railBlocks[h] = new int[] {at.rail[h] * c};
        }
        int[][] hostBlocks = new int[l][hosts]; // within the host: local rank k holds local index k of every host
        for (int k = 0; k < l; k++) {
            for (int h = 0; h < hosts; h++) {
                hostBlocks[k][h] = at.byHost[h][k] * c;
            }
        }
        int chunks = HostPipeline.chunks(call, output.byteSize(), c);
        // piece j of every block crosses the hosts while the host passes on piece j - 1 (one piece: no pipeline)
        int[] pieces = HierarchicalAllReduce.evenBounds(c, chunks);
        int perChunk = hosts - 1 + l - 1;
        HostPipeline.run(call, chunks, null, j -> {
            CollectiveCall rail = call.detachedSubgroup(at.rail, j * perChunk);
            HostLayout.ringOfGroups(rail, output, HostLayout.shift(railBlocks, pieces[j]), pieces[j + 1] - pieces[j],
                    null, 0, "across hosts");
            return rail;
        }, j -> HostLayout.ringOfGroups(call.subgroup(at.local, j * perChunk + hosts - 1), output,
                HostLayout.shift(hostBlocks, pieces[j]), pieces[j + 1] - pieces[j], null, 0, "within the host"));
    }
}
