package io.jccl.algorithm;

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
 * <p>Where the phases are not pipelined and the transport gives each host's ranks a shared arena, the two phases
 * within a host go through it instead of ring messages ({@link #throughHostArena}).
 *
 * <p>Steps: 2(L-1) within hosts and 2(H-1) between them. Bytes per rank: 2(T/L)(L-1) within its host, 2(T/L)(H-1)/H
 * over the network; per host 2T(H-1)/H over its link (a flat ring sends 2T(P-1)/P through the busiest link, 1.5T
 * at 2 x 2). Every element is reduced once and then copied, so results are identical on every rank. The summation
 * order is fixed by the layout, the size and the path the call takes, which every rank agrees on (through the
 * hosts' arenas or rings of messages, pipelined or not, the arenas' round size): so the bits repeat from run to run
 * of the same job, but may differ where only the tuning file (rank 0's), the arenas' size (rank 0's) or the group
 * (a sub-group has no hosts' arenas) differs, at 3 or more ranks on a host or 3 or more hosts (at 2 x 2 every sum
 * has two terms and addition commutes: only NaN payloads and MIN/MAX ties can differ). All are within the rigorous
 * bound of any other order (not gloo's bits: gloo sums in ring order over all P ranks); bits that depend on nothing
 * but the inputs and the world size are deterministic mode's ({@link OrderedAllReduce}).
 *
 * <p>Up to {@link #LEADERS_MAX_BYTES}, where steps cost more than bytes, in three steps instead (the <em>leaders</em>
 * regime, {@code HostLeaders}): the ranks of each host send their buffers to the host's first rank, its leader, which
 * sums them in rank order; the H leaders exchange these host sums, each sending its own to every other, and each
 * sums the H in host order; every leader sends the total to its host's ranks. One step over the network instead of
 * 2(H-1), T(H-1) bytes over each host's link (T at 2 hosts, as the rings), and the same bits on every rank.
 *
 * <p>Pipelined from 2 {@link HostPipeline#CHUNK_BYTES} up where the link between hosts is the limit
 * ({@link Topology#overlapsHosts}): the data goes in chunks (at most {@link HostPipeline#MAX_CHUNKS}), and the
 * inter-host phase of one chunk runs on a second thread while the call's thread runs the intra-host phases of its
 * neighbours, so the link is not idle while the ranks of a host reduce or gather (see {@link #pipelined}). Where
 * the CPU is the limit the phases run one after the other on the call's thread.
 */
public final class HierarchicalAllReduce extends HierarchicalAlgorithm {
    /**
     * The largest buffer reduced through the hosts' leaders ({@code HostLeaders}); larger ones go through the rings.
     * Measured on the 2 x 2 bed at 1 Gbit/s (docs/performance.md, "Small messages across hosts").
     */
    public static final long LEADERS_MAX_BYTES = 64 * 1024;

    @Override
    public OpType operation() {
        return OpType.ALL_REDUCE;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allReduce(call, operands.data(), operands.reduceOp());
    }

    /**
     * 2(L-1) steps at the intra-host cost moving 2T(L-1)/L bytes per rank, then 2(H-1) steps at the inter-host cost
     * moving 2T(H-1)/H bytes through each host's link (its L ranks' shares together): their sum, or where the
     * phases overlap ({@link Topology#overlapsHosts}: the link, not the CPU, is the limit) the longer of the two and
     * a chunk's share of the other ({@link HostPipeline#micros}).
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int l = Math.max(1, topology.ranksPerHost());
        int h = topology.hosts();
        double t = bytes;
        LinkCost within = topology.intraHost(messages);
        if (bytes <= LEADERS_MAX_BYTES) { // HostLeaders
            return HostLeaders.predictMicros(t, l, h, within, messages);
        }
        return HostPipeline.micros(within.micros(2 * (l - 1), 2 * t * (l - 1) / l),
                messages.micros(2 * (h - 1), 2 * t * (h - 1) / h), bytes, topology, messages);
    }

    public static void allReduce(CollectiveCall call, Buf data, ReduceOp op) {
        HostLayout at = HostLayout.of(call);
        // unsupported (HierarchicalAlgorithm) guarantees several hosts of L >= 2 ranks each
        if (data.byteSize() <= LEADERS_MAX_BYTES) {
            HostLeaders.allReduce(call, at, data, op, 0);
            return;
        }
        int chunks = HostPipeline.chunks(call, data.byteSize(), data.count());
        if (chunks == 1 && throughHostArena(call, 1, data)) {
            throughHostArena(call, at, data, op);
        } else {
            pipelined(call, at, data, op, chunks);
        }
    }

    /**
     * The three phases with the host's shared arena for the two within it (where they are not pipelined), in
     * rounds of at most one exchange buffer: the L ranks of a host put their input in (each all but its own
     * slice) and arrive; local rank i reduces slice i in rank order, its own values read from its array
     * ({@link SharedRounds#reduceOwnSlice}), allreduces it with the ranks of index i on the other hosts (a ring over
     * TCP), writes the result into its array and its exchange buffer and arrives again; every rank then copies the
     * other slices out. Each rank copies T into shared memory and T(L-1)/L out of it per call where the rings
     * within a host sent and received 2T(L-1)/L each, with a wake-up per message. The order of the additions is
     * fixed by the layout: the host's ranks in increasing order, then the hosts' sums in the rail's ring order.
     */
    private static void throughHostArena(CollectiveCall call, HostLayout at, Buf data, ReduceOp op) {
        CollectiveCall host = call.hostSubgroup(at.local, 0);
        io.jccl.transport.SharedArena a = host.arena();
        int l = at.local.length;
        int railSteps = 2 * (at.hosts() - 1);
        int elem = data.dtype().sizeBytes();
        int[] rounds = {0};
        a.enter();
        try {
            SharedRounds.run(host, a, data.count(), a.bufferBytes() / elem,
                    (half, start, m) -> SharedRounds.putOthersSlices(host, a, half, data.slice(start, m)),
                    (round, half, start, m) -> {
                        Buf chunk = data.slice(start, m);
                        int me = host.rank();
                        int lo = SharedRounds.sliceStart(m, me, l);
                        int hi = SharedRounds.sliceStart(m, me + 1, l);
                        Buf mine = chunk.slice(lo, hi - lo);
                        SharedRounds.reduceOwnSlice(host, a, half, lo, mine, op, true, false);
                        // steps 0-2 are the host's (arrive, reduced); each round's ring across hosts numbers its own
                        RingAllReduce.allReduce(call.subgroup(at.rail, 3 + rounds[0]++ * railSteps), mine, op);
                        a.put(half, lo, mine);
                        a.publish(io.jccl.transport.SharedArena.REDUCED, round);
                        host.step(2, "shared-memory reduced");
                        host.awaitArena(a, io.jccl.transport.SharedArena.REDUCED, round);
                        SharedRounds.copyOtherSlices(a, half, chunk, me, l);
                        host.countShared((long) (m - (hi - lo)) * elem + (long) (hi - lo) * elem,
                                ((long) (hi - lo) * (l - 1) + (m - (hi - lo))) * elem);
                    });
        } finally {
            a.exit();
        }
    }

    /**
     * The three phases in a {@link HostPipeline} of {@code chunks} chunks (one: no pipeline, no second thread): the
     * intra-host reduce-scatter and allgather of each chunk on the call's thread, the inter-host allreduce of its
     * slice on the second thread.
     * Every chunk is allreduced by the rings as one unpipelined chunk is, so the sums depend on the layout, the size
     * and the number of chunks (not on the threads' timing); they are not those of {@link #throughHostArena}, which
     * adds each host's ranks in rank order rather than in ring order.
     */
    private static void pipelined(CollectiveCall call, HostLayout at, Buf data, ReduceOp op, int chunks) {
        int l = at.local.length;
        int h = at.hosts();
        int perChunk = 4 * (l - 1) + 2 * (h - 1); // steps: reduce-scatter and allgather within, allreduce across
        int[] bounds = evenBounds(data.count(), chunks);
        HostPipeline.run(call, chunks, c -> {
            Buf chunk = slice(data, bounds, c);
            RingAllReduce.reduceScatterPhase(call.subgroup(at.local, c * perChunk), chunk, op,
                    evenBounds(chunk.count(), l));
        }, c -> {
            Buf chunk = slice(data, bounds, c);
            CollectiveCall rail = call.detachedSubgroup(at.rail, c * perChunk + 2 * (l - 1));
            RingAllReduce.allReduce(rail, slice(chunk, evenBounds(chunk.count(), l), at.index), op);
            return rail;
        }, c -> {
            Buf chunk = slice(data, bounds, c);
            RingAllReduce.allGatherPhase(call.subgroup(at.local, c * perChunk + 2 * (l - 1) + 2 * (h - 1)), chunk,
                    evenBounds(chunk.count(), l), 0);
        });
    }

    private static Buf slice(Buf data, int[] bounds, int k) {
        return data.slice(bounds[k], bounds[k + 1] - bounds[k]);
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
