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
        if (chunks == 1 && l > 1 && throughHostArena(call, hosts, input)) {
            CollectiveCall rail = call.subgroup(at.rail, 0);
            HostLayout.ringOfGroups(rail, output, railBlocks, c, null, 0, "across hosts");
            withinThroughArena(call, at, output, c, hosts - 1);
            return;
        }
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

    /**
     * The phase within the host through its shared arena (where the phases are not pipelined), after the rail's
     * ring: local rank k holds the blocks of local index k of every host (H blocks of {@code c} elements in
     * {@code output}); in rounds of a piece of every block, each rank puts its H pieces into its exchange buffer,
     * arrives, and copies the other ranks' pieces out into {@code output}. Steps from {@code stepBase}.
     */
    private static void withinThroughArena(CollectiveCall call, HostLayout at, Buf output, int c, int stepBase) {
        CollectiveCall host = call.hostSubgroup(at.local, stepBase);
        io.jccl.transport.SharedArena a = host.arena();
        int hosts = at.hosts();
        int l = at.local.length;
        int me = host.rank();
        int perRound = perBlock(a, hosts, output);
        a.enter();
        try {
            SharedRounds.run(host, a, c, perRound, (half, start, m) -> {
                for (int h = 0; h < hosts; h++) {
                    a.put(half, h * m, output.slice(at.byHost[h][me] * c + start, m));
                }
            }, (round, half, start, m) -> {
                for (int k = 0; k < l; k++) {
                    for (int h = 0; k != me && h < hosts; h++) {
                        a.get(k, half, h * m, output, at.byHost[h][k] * c + start, m);
                    }
                }
                host.countShared((long) hosts * m * output.dtype().sizeBytes(),
                        (long) (l - 1) * hosts * m * output.dtype().sizeBytes());
            });
        } finally {
            a.exit();
        }
    }
}
