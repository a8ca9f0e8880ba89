package io.jccl;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/**
 * Algorithm choices. {@link #AUTO} lets the communicator choose; the others name one algorithm class in
 * {@code io.jccl.algorithm}. The {@link #id()} is carried in frame headers, so ranks that chose differently are
 * reported as a mismatch.
 */
public enum Algorithm {
    /**
     * The communicator picks per call: the cheapest algorithm of the cost model for the operation, data type,
     * count and transport ({@link Communicator#algorithmFor(OpType, DataType, long)} says which).
     */
    AUTO(0),
    /** Rings: two-pass allreduce in gloo's order, allgather and reduce_scatter rotations, ring reduce. */
    RING(1),
    /** Binomial trees (broadcast; allreduce as reduce then broadcast). */
    TREE(2),
    /** Every rank exchanges directly with the root (gather, scatter). */
    DIRECT(3),
    /** N-1 pairwise exchange steps (all-to-all). */
    PAIRWISE(4),
    /** Ring signature check then a dissemination barrier. */
    DISSEMINATION(5),
    /** Rabenseifner: recursive-halving reduce-scatter then recursive-doubling allgather (allreduce). */
    HALVING_DOUBLING(6),
    /** Bruck's logarithmic allgather, for small blocks. */
    BRUCK(7),
    /**
     * Through memory every rank reads directly instead of messages (ranks that are threads, or processes on one
     * host over the shm transport): allreduce, broadcast, allgather, reduce_scatter, barrier.
     */
    SHARED_MEMORY(8),
    /**
     * Deterministic mode's reductions (allreduce, reduce_scatter, reduce): every element is summed in rank order
     * {@code ((x0 op x1) op x2) ...}, so floating-point bits depend only on the inputs and the world size. Runs
     * whenever {@code CommunicatorConfig.deterministic()} is on (for floating-point types, whatever else was asked
     * for); AUTO never picks it otherwise.
     */
    ORDERED(9),
    /**
     * Across hosts: a phase within each host (shared memory), one between hosts in which every local rank carries
     * its share at once (TCP), then one within each host again (allreduce); a tree whose first levels go from host
     * to host, one rank of each (broadcast); between hosts first, then within (allgather), the reverse
     * (reduce_scatter); through one rank of each host (small allreduces, barrier). Needs a transport that knows
     * which ranks share a host ({@code shm+tcp}).
     */
    HIERARCHICAL(10);

    private final int id;

    Algorithm(int id) {
        this.id = id;
    }

    /**
     * The stable number of this algorithm, as the frame headers carry it.
     *
     * @return the id, from 0 ({@link #AUTO}) up
     */
    public int id() {
        return id;
    }

    /**
     * The algorithms implemented for an operation, in declaration order. {@link #SHARED_MEMORY} also needs a
     * transport with a shared arena. What AUTO picks is decided per call by {@code io.jccl.pipeline.AlgorithmSelector}.
     *
     * <p>The implementations are listed in {@code io.jccl.algorithm.AlgorithmRegistry}, which this API type sits
     * below and cannot consult: this table names the same pairs ({@code AlgorithmRegistryTest} checks it), and
     * point-to-point {@code send}/{@code recv} are {@link #DIRECT} without an algorithm object.
     *
     * @param op the operation
     * @return the algorithms that can run {@code op}, never {@link #AUTO}; the first is the one
     *         {@link #resolve(OpType, Algorithm)} gives for AUTO
     */
    public static Set<Algorithm> available(OpType op) {
        return AVAILABLE.get(op);
    }

    /** {@link #available} of each operation, made once: the table is asked on every call that names an algorithm. */
    private static final java.util.Map<OpType, Set<Algorithm>> AVAILABLE = availableTable();

    private static java.util.Map<OpType, Set<Algorithm>> availableTable() {
        java.util.Map<OpType, Set<Algorithm>> m = new java.util.EnumMap<>(OpType.class);
        for (OpType op : OpType.values()) {
            m.put(op, java.util.Collections.unmodifiableSet(availableOf(op)));
        }
        return m;
    }

    private static Set<Algorithm> availableOf(OpType op) {
        switch (op) {
            case ALL_REDUCE:
                return EnumSet.of(RING, TREE, HALVING_DOUBLING, SHARED_MEMORY, ORDERED, HIERARCHICAL);
            case ALL_GATHER:
                return EnumSet.of(RING, BRUCK, SHARED_MEMORY, HIERARCHICAL);
            case REDUCE_SCATTER:
                return EnumSet.of(RING, SHARED_MEMORY, HIERARCHICAL, ORDERED);
            case REDUCE:
                return EnumSet.of(RING, SHARED_MEMORY, ORDERED);
            case BROADCAST:
                return EnumSet.of(TREE, SHARED_MEMORY, HIERARCHICAL);
            case GATHER:
            case SCATTER:
            case SEND:
            case RECV:
                return EnumSet.of(DIRECT);
            case ALL_TO_ALL:
                return EnumSet.of(PAIRWISE);
            case BARRIER:
                return EnumSet.of(DISSEMINATION, SHARED_MEMORY, HIERARCHICAL);
            default:
                throw new AssertionError(op);
        }
    }

    /**
     * Resolves AUTO and checks an explicit choice against {@link #available(OpType)}. This is the static answer,
     * without a cost model: AUTO (or null) becomes the first available algorithm.
     *
     * @param op the operation
     * @param requested the algorithm asked for; {@code null} or {@link #AUTO} for the default
     * @return {@code requested} when {@code op} has it, else the first of {@link #available(OpType)}
     * @throws IllegalArgumentException if {@code requested} is an algorithm {@code op} does not have
     */
    public static Algorithm resolve(OpType op, Algorithm requested) {
        Set<Algorithm> options = available(op);
        if (requested == null || requested == AUTO) {
            return options.iterator().next();
        }
        if (!options.contains(requested)) {
            throw new IllegalArgumentException(op.label() + " has no " + requested + " algorithm; available: "
                    + options);
        }
        return requested;
    }

    /**
     * The algorithm with this {@link #id()}, as read from a frame header.
     *
     * @param id an algorithm id
     * @return the algorithm
     * @throws IllegalArgumentException if no algorithm has this id
     */
    public static Algorithm fromId(int id) {
        for (Algorithm a : values()) {
            if (a.id == id) {
                return a;
            }
        }
        throw new IllegalArgumentException("unknown algorithm id: id=" + id);
    }

    /**
     * Parses a name as the command line and {@code JCCL_ALGO_*} give it: the constant's name in any case, with
     * {@code -} for {@code _} ({@code halving-doubling}), or the aliases {@code hd} and {@code rabenseifner}
     * ({@link #HALVING_DOUBLING}), {@code shm} and {@code shared} ({@link #SHARED_MEMORY}).
     *
     * @param name the name, surrounding blanks ignored
     * @return the algorithm
     * @throws IllegalArgumentException if the name is no algorithm's
     */
    public static Algorithm parse(String name) {
        String n = name.trim().toUpperCase(Locale.ROOT).replace('-', '_');
        if (n.equals("HD") || n.equals("RABENSEIFNER")) {
            return HALVING_DOUBLING;
        }
        if (n.equals("SHM") || n.equals("SHARED")) {
            return SHARED_MEMORY;
        }
        return valueOf(n);
    }
}
