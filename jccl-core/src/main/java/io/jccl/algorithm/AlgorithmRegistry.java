package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Every {@link CollectiveAlgorithm}, by operation and {@link Algorithm} constant: the only place the pipeline and
 * AUTO find algorithms. An algorithm is one class implementing {@link CollectiveAlgorithm} plus its line in
 * {@link #STANDARD}; {@link Algorithm#available} (the public API, which cannot see this package) must list the
 * same pairs, which {@code AlgorithmRegistryTest} checks.
 *
 * <p>Point-to-point {@code send} and {@code recv} (always {@link Algorithm#DIRECT}) are not collectives and have no
 * entry.
 */
public final class AlgorithmRegistry {
    private static final AlgorithmRegistry STANDARD = new AlgorithmRegistry(List.of(
            new RingAllReduce(),
            new BinomialTreeAllReduce(),
            new HalvingDoublingAllReduce(),
            new SharedMemoryAllReduce(),
            new OrderedAllReduce(),
            new HierarchicalAllReduce(),
            new RingAllGather(),
            new BruckAllGather(),
            new SharedMemoryAllGather(),
            new HierarchicalAllGather(),
            new RingReduceScatter(),
            new SharedMemoryReduceScatter(),
            new HierarchicalReduceScatter(),
            new OrderedReduceScatter(),
            new RingReduce(),
            new SharedMemoryReduce(),
            new OrderedReduce(),
            new BinomialTreeBroadcast(),
            new SharedMemoryBroadcast(),
            new HierarchicalBroadcast(),
            new DirectGather(),
            new DirectScatter(),
            new PairwiseAllToAll(),
            new SignatureCheck(),
            new SharedMemoryBarrier(),
            new HierarchicalBarrier()));

    private final List<CollectiveAlgorithm> all;
    private final Map<OpType, Map<Algorithm, CollectiveAlgorithm>> byOperation = new EnumMap<>(OpType.class);
    private final Map<OpType, List<CollectiveAlgorithm>> ordered = new EnumMap<>(OpType.class);

    /**
     * A registry of {@code algorithms}.
     *
     * @throws IllegalArgumentException if two implement the same operation and constant, or one claims
     *                                  {@link Algorithm#AUTO}
     */
    public AlgorithmRegistry(List<? extends CollectiveAlgorithm> algorithms) {
        this.all = Collections.unmodifiableList(new ArrayList<>(algorithms));
        for (CollectiveAlgorithm a : all) {
            if (a.algorithm() == Algorithm.AUTO) {
                throw new IllegalArgumentException(a.getClass().getName() + " claims AUTO, which is no algorithm");
            }
            CollectiveAlgorithm before = byOperation.computeIfAbsent(a.operation(), o -> new EnumMap<>(Algorithm.class))
                    .putIfAbsent(a.algorithm(), a);
            if (before != null) {
                throw new IllegalArgumentException(a.operation().label() + " " + a.algorithm()
                        + " is registered twice: " + before.getClass().getName() + " and " + a.getClass().getName());
            }
        }
        byOperation.forEach((op, m) -> ordered.put(op, List.copyOf(m.values())));
    }

    /** The algorithms of jccl. */
    public static AlgorithmRegistry standard() {
        return STANDARD;
    }

    /** Every algorithm, in registration order. */
    public List<CollectiveAlgorithm> all() {
        return all;
    }

    /** The algorithms for {@code op}, in the declaration order of {@link Algorithm}; empty for point-to-point. */
    public List<CollectiveAlgorithm> forOperation(OpType op) {
        return ordered.getOrDefault(op, List.of());
    }

    /** The implementation of {@code algorithm} for {@code op}, or null. */
    public CollectiveAlgorithm find(OpType op, Algorithm algorithm) {
        Map<Algorithm, CollectiveAlgorithm> m = byOperation.get(op);
        return m == null ? null : m.get(algorithm);
    }

    /**
     * The implementation of {@code algorithm} for {@code op}.
     *
     * @throws IllegalArgumentException if there is none
     */
    public CollectiveAlgorithm get(OpType op, Algorithm algorithm) {
        CollectiveAlgorithm a = find(op, algorithm);
        if (a == null) {
            throw new IllegalArgumentException(op.label() + " has no " + algorithm + " algorithm; registered: "
                    + (byOperation.containsKey(op) ? byOperation.get(op).keySet() : "none"));
        }
        return a;
    }
}
