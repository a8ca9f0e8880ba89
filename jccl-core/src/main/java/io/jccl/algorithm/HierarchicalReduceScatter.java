package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Reduce_scatter across hosts, for H hosts of L ranks each, the reverse of {@link HierarchicalAllGather}: first
 * within each host, a ring reduce-scatter after which local rank i holds its host's partial sums of the blocks
 * of local index i on every host (H blocks); then between hosts, the H ranks with local index i (one per host)
 * ring-reduce-scatter those, so each ends with its own block summed over every rank. A host sends each of its L
 * ranks' H-1 foreign blocks once: T(H-1)/H over its link, the minimum (a flat ring: T(P-1)/P through the busiest
 * link, 3T/4 at 2 x 2). T is the input's bytes. The order of the additions is fixed by the layout. From 2
 * {@link HostPipeline#CHUNK_BYTES} of input up, where the link between hosts is the limit
 * ({@link Topology#overlapsHosts}), pipelined ({@link HostPipeline}): piece j of every block is reduced across the
 * hosts on a second thread while the host reduces piece j + 1.
 */
public final class HierarchicalReduceScatter extends HierarchicalAlgorithm {
    @Override
    public OpType operation() {
        return OpType.REDUCE_SCATTER;
    }

    /** L-1 steps within hosts moving T(L-1)/L per rank, then H-1 steps moving T(H-1)/H through each host's link. */
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
        Buf output = operands.output();
        int c = output.count();
        int r = call.rank();
        HostLayout at = HostLayout.of(call);
        int hosts = at.hosts();
        int l = at.local.length;
        // the input stays as it was (and may hold the output): the host's ring reads it as the base of its
        // reductions (HostLayout.ringOfGroups), which write the blocks this rank sums into the work buffer; the last
        // step across hosts writes this rank's own block into the output
        Buf input = operands.input();
        Buf work = call.scratchLike(input, input.count());
        int[][] hostGroups = new int[l][hosts]; // local rank k gathers the sums of the blocks of local index k
        for (int k = 0; k < l; k++) {
            for (int h = 0; h < hosts; h++) {
                hostGroups[k][h] = at.byHost[h][k] * c;
            }
        }
        int[][] railGroups = new int[hosts][];
        for (int h = 0; h < hosts; h++) {
            railGroups[h] = new int[] {at.rail[h] * c};
        }
        int chunks = HostPipeline.chunks(call, work.byteSize(), c);
        // the last step across hosts reduces this rank's block straight into the output, not into work and a copy
        // after (hosts > 1 for a hierarchical algorithm; with one, the ring has no step and the copy stays)
        boolean direct = hosts > 1;
        if (chunks == 1 && l > 1 && throughHostArena(call, hosts * l, input)) {
            withinThroughArena(call, at, input, work, c, operands.reduceOp());
            HostLayout.ringOfGroups(call.subgroup(at.rail, l), work, null, railGroups, c, operands.reduceOp(), 1,
                    "across hosts", direct ? output : null);
        } else {
            // piece j of every block is reduced across the hosts while the host reduces piece j + 1 (one: no
            // pipeline)
            int[] pieces = HierarchicalAllReduce.evenBounds(c, chunks);
            int perChunk = l - 1 + hosts - 1;
            HostPipeline.run(call, chunks, j -> HostLayout.ringOfGroups(call.subgroup(at.local, j * perChunk), work,
                    input, HostLayout.shift(hostGroups, pieces[j]), pieces[j + 1] - pieces[j], operands.reduceOp(),
                    1, "within the host"), j -> {
                        CollectiveCall rail = call.detachedSubgroup(at.rail, j * perChunk + l - 1);
                        int m = pieces[j + 1] - pieces[j];
                        HostLayout.ringOfGroups(rail, work, null, HostLayout.shift(railGroups, pieces[j]), m,
                                operands.reduceOp(), 1, "across hosts", direct ? output.slice(pieces[j], m) : null);
                        return rail;
                    }, null);
        }
        if (!direct) {
            work.copyTo(r * c, output, 0, c);
        }
        call.releaseScratch(work);
    }

    /**
     * The phase within the host through its shared arena (where the phases are not pipelined): afterwards
     * {@code work} holds, at the blocks of local index k of every host (k this rank's local index), their sums over
     * the host's ranks in increasing order. In rounds of a piece of every block: each rank puts the pieces of the
     * other local indices' blocks into its exchange buffer (group k' at offset k' H m, H pieces of m), arrives, and
     * reduces its own group's pieces into {@code work}, its own values read from its input as each piece is reduced
     * ({@link SharedRounds#reduceOwnSlice}), not copied into {@code work} beforehand. Its input is only read.
     */
    private static void withinThroughArena(CollectiveCall call, HostLayout at, Buf input, Buf work, int c,
                                           io.jccl.ReduceOp op) {
        CollectiveCall host = call.hostSubgroup(at.local, 0);
        io.jccl.transport.SharedArena a = host.arena();
        int hosts = at.hosts();
        int l = at.local.length;
        int me = host.rank();
        int elem = input.dtype().sizeBytes();
        int perRound = perBlock(a, hosts * l, input);
        a.enter();
        try {
            SharedRounds.run(host, a, c, perRound, (half, start, m) -> {
                for (int k = 0; k < l; k++) {
                    for (int h = 0; k != me && h < hosts; h++) {
                        a.put(half, (k * hosts + h) * m, input.slice(at.byHost[h][k] * c + start, m));
                    }
                }
            }, (round, half, start, m) -> {
                for (int h = 0; h < hosts; h++) {
                    int block = at.byHost[h][me] * c + start;
                    SharedRounds.reduceOwnSlice(host, a, half, (me * hosts + h) * m, input.slice(block, m),
                            work.slice(block, m), op, true, false);
                }
                host.countShared((long) (l - 1) * hosts * m * elem, (long) (l - 1) * hosts * m * elem);
            });
        } finally {
            a.exit();
        }
    }
}
