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
        int step = HostLeaders.agree(call, 0);
        io.jccl.buffer.Buf data = operands.data();
        if (data.byteSize() > ARENA_MIN_BYTES && throughHostArena(call, 1, data)) {
            throughHostArena(call, at, data, rootHost, rootLocal, step);
        } else {
            BinomialTreeBroadcast.tree(call, data, order, step);
        }
    }

    /**
     * Up to {@link #ARENA_MIN_BYTES}, where its levels within a host are messages, this tree ties the flat one where
     * the CPU is the limit (one level across hosts and the rest within, at 2 x 2), and wins the tie: fewer of its
     * messages cross hosts (3 frames against 4 at 2 x 2, the check included), from the hosts' rails alone, and each
     * costs CPU on both hosts that the model does not count. On the unlimited bed the flat tree took 1.39-1.61x its
     * time at 4 B-64 KiB, in every one of three interleaved runs (session 24, docs/performance.md). Above, where it
     * would tie only without the hosts' arenas (a sub-group across hosts), the flat tree was the faster (0.55-0.88 of
     * its time at 1-64 MiB, session 21).
     */
    @Override
    public boolean winsTies(long bytes, Topology topology) {
        return bytes <= ARENA_MIN_BYTES;
    }

    /** Buffers above this go through the hosts' arenas within a host ({@link #throughHostArena}). */
    static final long ARENA_MIN_BYTES = 64 << 10;

    /**
     * The levels within a host through its shared arena, in the eager rounds of {@link SharedMemoryBroadcast}
     * (rounds of {@link SharedMemoryBroadcast#roundBytes}): for each round's piece, the ranks of the root's local index
     * on every host (the root's rail) broadcast it between hosts (the binomial tree over them, from the root's
     * host); each of them puts it into its exchange buffer and arrives without waiting, and goes on to the next
     * piece while its host's other ranks wait for it alone and copy the piece out. So a host's link carries the next
     * piece while its ranks copy this one. The root puts and arrives before it sends, so that its host's ranks copy
     * the piece while it crosses the hosts; the rail's other ranks keep the receives of the next {@link #AHEAD}
     * pieces posted, so that each piece goes from the socket straight into the caller's buffer though the root runs
     * ahead. The call was checked first ({@code HostLeaders.agree}); within a host the rounds compare signatures as
     * the shared-memory broadcast does.
     */
    private static void throughHostArena(CollectiveCall call, HostLayout at, io.jccl.buffer.Buf data, int rootHost,
                                         int rootLocal, int firstStep) {
        int hosts = at.hosts();
        int[] rail = new int[hosts]; // the root's local index on every host, the root's host first
        for (int h = 0; h < hosts; h++) {
            rail[h] = at.byHost[(rootHost + h) % hosts][rootLocal];
        }
        int[] railOrder = new int[hosts];
        for (int h = 0; h < hosts; h++) {
            railOrder[h] = h;
        }
        boolean onRail = at.index == rootLocal;
        CollectiveCall host = call.hostSubgroup(at.local, firstStep);
        io.jccl.transport.SharedArena a = host.arena();
        int elem = data.dtype().sizeBytes();
        int n = data.count();
        int per = Math.max(1, SharedMemoryBroadcast.roundBytes(data.byteSize(), a.bufferBytes()) / elem);
        int treeSteps = (int) LinkCost.log2Ceil(hosts) + 1;
        int pieces = (n + per - 1) / per;
        boolean root = call.rank() == rail[0];
        // the rail's receives of the next AHEAD pieces posted before this one is waited for, in order: the root runs
        // ahead of the ranks that copy its pieces out, and a piece that came before its receive was read whole into
        // a spare array and copied again; a window, so that a small arena's many pieces do not all wait at once
        CollectiveCall[] across = new CollectiveCall[AHEAD];
        CollectiveCall.Receive[][] posted = new CollectiveCall.Receive[AHEAD][];
        for (int k = 0; onRail && !root && k < Math.min(AHEAD, pieces); k++) {
            postPiece(call, rail, railOrder, data, per, k, stepOf(firstStep, treeSteps, k), across, posted);
        }
        a.enter();
        try {
            for (int k = 0; k < pieces; k++) {
                int start = k * per;
                int m = Math.min(per, n - start);
                io.jccl.buffer.Buf piece = data.slice(start, m);
                long round = SharedRounds.begin(host, a);
                int half = (int) (round & 1);
                if (onRail && !root) {
                    BinomialTreeBroadcast.tree(across[k % AHEAD], piece, railOrder, 0, posted[k % AHEAD]);
                    if (k + AHEAD < pieces) {
                        postPiece(call, rail, railOrder, data, per, k + AHEAD, stepOf(firstStep, treeSteps, k + AHEAD),
                                across, posted);
                    }
                }
                if (onRail) {
                    a.put(half, 0, piece);
                }
                host.arriveEagerly(a, round, rootLocal);
                if (root) { // after the arrival: the host's other ranks copy the piece out while it crosses the hosts
                    BinomialTreeBroadcast.tree(call.subgroup(rail, stepOf(firstStep, treeSteps, k)), piece,
                            railOrder, 0, null);
                }
                if (!onRail) {
                    a.get(rootLocal, half, 0, piece);
                }
                host.countShared(onRail ? (long) m * elem : 0, onRail ? 0 : (long) m * elem);
            }
        } finally {
            a.exit();
        }
    }

    /** Pieces of {@link #throughHostArena} whose receives a rail rank keeps posted ahead of the one it waits for. */
    private static final int AHEAD = 8;

    /** The first step of piece {@code k}'s tree across the hosts: after the check's 2, {@code treeSteps} a piece. */
    private static int stepOf(int firstStep, int treeSteps, int k) {
        return firstStep + 2 + k * treeSteps;
    }

    /** Posts the receives of piece {@code k} ({@code per} elements each) from the rail's tree into slot k % AHEAD. */
    private static void postPiece(CollectiveCall call, int[] rail, int[] railOrder, io.jccl.buffer.Buf data, int per,
                                  int k, int stepBase, CollectiveCall[] across, CollectiveCall.Receive[][] posted) {
        int n = data.count();
        across[k % AHEAD] = call.subgroup(rail, stepBase);
        posted[k % AHEAD] = BinomialTreeBroadcast.fromParent(across[k % AHEAD],
                data.slice(k * per, Math.min(per, n - k * per)), railOrder, 0);
    }

    /**
     * The signature check (not counted, as for the flat tree), then ceil(log2 H) levels across hosts, each carrying
     * T over a host's link, and ceil(log2 L) levels within hosts at the intra-host cost; above
     * {@link #ARENA_MIN_BYTES} with the hosts' arenas ({@link Topology#hostArenaBytes}), instead of those, one
     * synchronisation per round and T through the arena ({@link #throughHostArena}; the rounds overlap the levels
     * across hosts, which the sum does not count).
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        double across = LinkCost.log2Ceil(topology.hosts());
        double t = bytes;
        double between = messages.micros(across, t * across);
        if (topology.hostArenaBytes() > 0 && bytes > ARENA_MIN_BYTES) {
            double rounds = Math.ceil(t / SharedMemoryBroadcast.roundBytes(bytes, topology.hostArenaBytes()));
            return between + arena.micros(rounds, t);
        }
        double within = LinkCost.log2Ceil(Math.max(1, topology.ranksPerHost()));
        return between + topology.intraHost(messages).micros(within, t * within);
    }
}
