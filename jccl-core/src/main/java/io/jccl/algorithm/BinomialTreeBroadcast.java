package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Binomial-tree broadcast. With ranks renumbered v = (r - root) mod P, rank v > 0 receives the whole buffer from
 * v - 2^floor(log2 v), then sends it to v + 2^k for every 2^k > v with v + 2^k < P, smallest first; in segments
 * ({@code segmentBytes}), each forwarded as soon as it has arrived, so a large buffer crosses the tree's levels in
 * a pipeline.
 *
 * <p>Cost: {@link #predictMicros}; each non-root receives T bytes once. Preceded by the first step of the
 * {@link SignatureCheck} alone ({@link SignatureCheck#neighbours}): every disagreement fails at least two ranks at
 * once, which abort the others; a non-root takes data only from a parent with its own signature, so it never
 * returns another root's data; a root (or a rank that wrongly takes itself for one) sends and may return before it
 * hears, and its next call fails. The whole check (its dissemination rounds too) would add ceil(log2 P) rounds of
 * waiting: five hops instead of three for 4 ranks.
 */
public final class BinomialTreeBroadcast implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.BROADCAST;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.TREE;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        broadcast(call, operands.data(), operands.root());
    }

    /**
     * ceil(log2 P) steps; a rank sends T bytes to each of its children, the root to ceil(log2 P) of them (T =
     * buffer bytes). The signature check's empty frames are not counted.
     *
     * <p>Across hosts ({@link Topology#multiHost}), level by level of root 0's tree (level k: v sends to v + 2^k):
     * a level whose edges all stay within hosts costs one step of T at the intra-host cost, a level with an edge
     * between hosts one step at the inter-host cost, of T, or where the link between hosts is the limit
     * ({@link Topology#overlapsHosts}) of T times the most edges that leave one host at that level (they share its
     * link). So where the CPU is the limit this tree costs what the hierarchical one does when that one's levels
     * within a host are messages too (one level across and the rest within, at 2 x 2). On that tie AUTO takes this
     * one, the first in declaration order, above 64 KiB (on the unlimited 2 x 2 bed it took 0.55-0.88 of that
     * hierarchical tree's time at 1-64 MiB in each of seven runs, sessions 21 and 23), and the hierarchical one up to
     * 64 KiB, where this one took 1.39-1.61x its time ({@code HierarchicalBroadcast.winsTies}, session 24). Where the link is the limit it sends T
     * more than once over a host's link per level, and where the hosts' arenas carry the hierarchical broadcast
     * within a host (above 64 KiB), the hierarchical one costs less.
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        double t = bytes;
        if (topology.multiHost()) {
            return levelsAcrossHosts(t, topology, messages);
        }
        double log = LinkCost.log2Ceil(topology.world());
        return messages.micros(log, t * log);
    }

    /** The levels of root 0's tree priced by the links they use ({@link #predictMicros}). */
    private static double levelsAcrossHosts(double t, Topology topology, LinkCost messages) {
        int p = topology.world();
        int[] hostOf = topology.hostOf();
        boolean linkBound = topology.overlapsHosts(messages);
        LinkCost within = topology.intraHost(messages);
        double micros = 0;
        for (int mask = 1; mask < p; mask <<= 1) {
            int[] leaving = new int[topology.hosts()];
            int most = 0;
            for (int v = 0; v < mask && v + mask < p; v++) {
                if (hostOf[v] != hostOf[v + mask]) {
                    most = Math.max(most, ++leaving[hostOf[v]]);
                }
            }
            micros += most == 0 ? within.micros(1, t) : messages.micros(1, t * (linkBound ? most : 1));
        }
        return micros;
    }

    public static void broadcast(CollectiveCall call, Buf data, int root) {
        int p = call.size();
        int[] order = new int[p];
        for (int v = 0; v < p; v++) {
            order[v] = (v + root) % p;
        }
        broadcast(call, data, order);
    }

    /**
     * The tree over the ranks in {@code order}: virtual rank v is rank {@code order[v]}, the root is
     * {@code order[0]}. Which ranks are a parent's children is all the order changes (the hierarchical broadcast
     * puts the hosts in the low bits of v, so the tree's first levels cross hosts once each).
     */
    static void broadcast(CollectiveCall call, Buf data, int[] order) {
        if (call.size() > 1) {
            tree(call, data, order, SignatureCheck.neighbours(call, 0));
        }
    }

    /**
     * Bytes per segment for a buffer of {@code bytes}: a quarter of it, between 64 KiB and
     * {@link RingAllReduce#SEGMENT_BYTES}, so that a buffer of a few segments still crosses the levels in a pipeline.
     */
    static int segmentBytes(long bytes) {
        return (int) Math.max(64 << 10, Math.min(RingAllReduce.SEGMENT_BYTES, bytes / 4));
    }

    /** The tree of {@link #broadcast(CollectiveCall, Buf, int[])} alone, its steps numbered from {@code step}. */
    static void tree(CollectiveCall call, Buf data, int[] order, int step) {
        tree(call, data, order, step, fromParent(call, data, order, step));
    }

    /**
     * The first half of {@link #tree(CollectiveCall, Buf, int[], int)}: this rank's receives of {@code data}'s
     * segments from its parent, posted now (so that the segments go straight into {@code data} however early they
     * come), or null at the tree's root. Hand them to {@link #tree(CollectiveCall, Buf, int[], int, CollectiveCall.Receive[])}.
     */
    static CollectiveCall.Receive[] fromParent(CollectiveCall call, Buf data, int[] order, int step) {
        int v = position(call, order);
        if (v == 0) {
            return null;
        }
        int seg = Math.max(1, segmentBytes(data.byteSize()) / data.dtype().sizeBytes());
        int segments = Math.max(1, (data.count() + seg - 1) / seg);
        CollectiveCall.Receive[] posted = new CollectiveCall.Receive[segments];
        int parentBit = Integer.highestOneBit(v);
        call.step(step + Integer.numberOfTrailingZeros(parentBit), "tree receive");
        for (int j = 0; j < segments; j++) {
            posted[j] = call.postRecv(order[v - parentBit], RingAllReduce.segment(data, j, seg), null);
        }
        return posted;
    }

    /** The tree, this rank's receives from its parent already posted ({@link #fromParent}; null at the root). */
    static void tree(CollectiveCall call, Buf data, int[] order, int step, CollectiveCall.Receive[] fromParent) {
        int p = call.size();
        int v = position(call, order);
        int seg = Math.max(1, segmentBytes(data.byteSize()) / data.dtype().sizeBytes());
        int segments = Math.max(1, (data.count() + seg - 1) / seg);
        int firstChild = v == 0 ? 1 : Integer.highestOneBit(v) << 1;
        // segment by segment: a rank forwards segment j while segment j + 1 is still arriving
        for (int j = 0; j < segments; j++) {
            if (v != 0) {
                call.complete(fromParent[j]);
            }
            for (int mask = firstChild; mask < p; mask <<= 1) {
                if (v + mask < p) {
                    call.step(step + Integer.numberOfTrailingZeros(mask), "tree send");
                    call.send(order[v + mask], RingAllReduce.segment(data, j, seg));
                }
            }
        }
    }

    /** This rank's position in the tree's {@code order}. */
    private static int position(CollectiveCall call, int[] order) {
        int v = 0;
        while (order[v] != call.rank()) {
            v++;
        }
        return v;
    }
}
