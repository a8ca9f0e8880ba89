package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.algorithm.AlgorithmRegistry;
import io.jccl.algorithm.CollectiveAlgorithm;
import io.jccl.algorithm.LinkCost;
import io.jccl.algorithm.Topology;

/**
 * What {@link Algorithm#AUTO} means for one call: of the registered algorithms for the operation
 * ({@link AlgorithmRegistry}) that can run here, the one with the lowest predicted time
 * ({@link CollectiveAlgorithm#predictMicros}: a latency and bandwidth model per algorithm, in the manner of NCCL's
 * tuning), the first in {@link Algorithm}'s declaration order on a tie unless the later one wins ties
 * ({@link CollectiveAlgorithm#winsTies}: the hierarchical broadcast up to 64 KiB). The model's parameters come from
 * {@link CostModel} ({@code jccl tune} measures them; defaults otherwise): one pair for messages over the
 * transport, one for its shared arena. Where {@code jccl tune --choices} measured the algorithms of an operation on
 * this transport and world size, the measured choice comes first ({@link CostModel#choice}).
 *
 * <p>{@link Algorithm#ORDERED} is never chosen here: it costs at least the ring's time, and runs only because
 * deterministic mode ({@code CommunicatorConfig.deterministic()}) or the caller asks for it.
 *
 * <p>Every rank must choose alike: the choice depends only on the operation, world size, bytes, transport and
 * the model's parameters, which a correct program has equal on every rank.
 */
public final class AlgorithmSelector {
    private final AlgorithmRegistry registry;
    private final Topology topology;
    private final LinkCost messages;
    private final LinkCost arena;
    /**
     * The model, for its measured choices ({@link CostModel#choice}), on a transport of one part whose ranks are not
     * known to span hosts; null elsewhere (across hosts the tuning measures links, not choices).
     */
    private final CostModel measured;
    /** {@link #overlapsHosts()}, decided once. */
    private final boolean overlapsHosts;
    /** Choices made so far, by operation and bytes: the same sizes recur every step of a training loop. */
    private final java.util.concurrent.ConcurrentHashMap<Long, Algorithm> chosen =
            new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * @param arenaBytes the bytes of one exchange buffer of the transport's shared arena; 0 when it has none
     */
    public AlgorithmSelector(CostModel model, String transport, int arenaBytes, int world) {
        this(AlgorithmRegistry.standard(), model, new Topology(world, transport, false, arenaBytes > 0, arenaBytes));
    }

    /**
     * The selector of a communicator with {@code topology}. For a transport of two parts ({@code shm+tcp}, a
     * communicator across hosts), messages cost {@link CostModel#INTER_HOST}'s parameters ({@link CostModel#INTRA_HOST}'s
     * in a sub-group whose ranks are all on one host; for a transport of one part, {@link CostModel#INTER_HOST}'s
     * where its layout is known and spans several hosts, as TCP with one rank per host),
     * {@link CostModel#INTRA_HOST}'s give {@link Topology#intraHost}, and the arena costs the first part's (each
     * host's arena, {@link Topology#hostArenaBytes}).
     */
    public AlgorithmSelector(CostModel model, Topology topology) {
        this(AlgorithmRegistry.standard(), model, topology);
    }

    AlgorithmSelector(AlgorithmRegistry registry, CostModel model, Topology topology) {
        this.registry = registry;
        String name = topology.transport();
        int plus = name.indexOf('+');
        boolean acrossHosts = plus >= 0;
        // a sub-group of such a communicator whose ranks are all on one host sends only within it
        boolean oneHost = topology.hostOf() != null && topology.hosts() == 1;
        // a transport of one part whose layout is known and spans hosts (TCP where the co-location proof put every
        // rank on a host of its own) sends only between hosts
        boolean betweenHosts = topology.hostOf() != null && topology.hosts() > 1;
        this.messages = LinkCost.of(model.link(!acrossHosts ? (betweenHosts ? CostModel.INTER_HOST : name)
                : oneHost ? CostModel.INTRA_HOST : CostModel.INTER_HOST));
        // across hosts, the arena is each host's: the local transport's ({@code shm} of {@code shm+tcp})
        this.arena = LinkCost.of(model.arena(acrossHosts ? name.substring(0, plus) : name));
        this.topology = acrossHosts ? topology.withIntraHost(LinkCost.of(model.link(CostModel.INTRA_HOST))) : topology;
        this.measured = acrossHosts || betweenHosts ? null : model;
        this.overlapsHosts = this.topology.overlapsHosts(messages); // asked on every call across hosts
    }

    /**
     * The cheapest algorithm for {@code op} on {@code bytes}: the call's signature count in bytes (the input for
     * allreduce, broadcast and allgather, the output for reduce_scatter).
     */
    public Algorithm choose(OpType op, long bytes) {
        long key = (long) op.ordinal() << 56 | bytes;
        Algorithm cached = chosen.get(key);
        if (cached != null) {
            return cached;
        }
        Algorithm a = evaluate(op, bytes);
        if (chosen.size() < 4096) {
            chosen.put(key, a);
        }
        return a;
    }

    private Algorithm evaluate(OpType op, long bytes) {
        Algorithm chosen = measured == null ? null : measured.choice(topology.transport(), op, topology.world(), bytes);
        if (chosen != null) { // measured on this transport and world size: it knows what the model does not
            CollectiveAlgorithm impl = registry.find(op, chosen);
            if (impl != null && impl.unsupported(topology) == null) {
                return chosen;
            }
        }
        Algorithm best = Algorithm.resolve(op, Algorithm.AUTO); // point-to-point: no registered algorithm
        double bestCost = Double.MAX_VALUE;
        for (CollectiveAlgorithm a : registry.forOperation(op)) {
            if (a.unsupported(topology) != null || a.algorithm() == Algorithm.ORDERED) {
                continue; // ORDERED runs when deterministic mode asks for it (CallFactory), never by cost
            }
            double c = a.predictMicros(bytes, topology, messages, arena);
            // a tie goes to the first declared unless the later one says it wins ties (the hierarchical broadcast
            // up to 64 KiB: CollectiveAlgorithm.winsTies)
            if (c < bestCost || (c <= bestCost * (1 + 1e-9) && a.winsTies(bytes, topology))) {
                bestCost = c;
                best = a.algorithm();
            }
        }
        return best;
    }

    /**
     * Whether the hierarchical algorithms overlap their phases within and across hosts on this communicator
     * ({@link Topology#overlapsHosts}): where the link between hosts, not the CPU, is the limit by the model's
     * parameters.
     */
    public boolean overlapsHosts() {
        return overlapsHosts;
    }

    /**
     * Predicted microseconds of {@code a} for {@code op} on {@code bytes} ({@link CollectiveAlgorithm#predictMicros});
     * NaN if no such algorithm is registered.
     */
    public double predictMicros(OpType op, Algorithm a, long bytes) {
        CollectiveAlgorithm impl = registry.find(op, a);
        return impl == null ? Double.NaN : impl.predictMicros(bytes, topology, messages, arena);
    }
}
