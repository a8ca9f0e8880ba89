package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.OpType;

/**
 * What {@link Algorithm#AUTO} means for one call: the algorithm with the lowest predicted time under a latency
 * and bandwidth model, in the manner of NCCL's tuning. For an algorithm that takes {@code s} sequential steps and
 * moves {@code b} bytes through the busiest rank, the prediction is {@code s * alpha + b * beta}, with
 * {@code alpha} (microseconds per step) and {@code beta} (microseconds per byte) per transport, and for
 * {@link Algorithm#SHARED_MEMORY} its own pair (per synchronisation, per byte copied). The parameters come from
 * {@link CostModel} ({@code jccl tune} measures them; defaults otherwise).
 *
 * <p>Every rank must choose alike: the choice depends only on the operation, world size, bytes, transport and
 * the model's parameters, which a correct program has equal on every rank.
 */
public final class AlgorithmSelector {
    private final CostModel model;
    private final String transport;
    private final boolean arena;
    private final int world;
    private final int arenaBytes;
    /** Choices made so far, by operation and bytes: the same sizes recur every step of a training loop. */
    private final java.util.concurrent.ConcurrentHashMap<Long, Algorithm> chosen =
            new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * @param arenaBytes the bytes of one exchange buffer of the transport's shared arena; 0 when it has none
     */
    public AlgorithmSelector(CostModel model, String transport, int arenaBytes, int world) {
        this.model = model;
        this.transport = transport;
        this.arena = arenaBytes > 0;
        this.arenaBytes = arenaBytes;
        this.world = world;
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
        Algorithm best = Algorithm.resolve(op, Algorithm.AUTO);
        double bestCost = Double.MAX_VALUE;
        for (Algorithm a : Algorithm.available(op)) {
            if (a == Algorithm.SHARED_MEMORY && !arena) {
                continue;
            }
            double c = predictMicros(op, a, bytes);
            if (c < bestCost) {
                bestCost = c;
                best = a;
            }
        }
        return best;
    }

    /** Predicted microseconds of {@code a} for {@code op} on {@code bytes}; NaN if the model has no formula. */
    public double predictMicros(OpType op, Algorithm a, long bytes) {
        int p = world;
        if (p == 1) {
            return a == Algorithm.SHARED_MEMORY ? 1 : 0; // nothing to do; prefer the message path (no arena)
        }
        double log = Math.ceil(Math.log(p) / Math.log(2));
        double t = bytes;
        double[] ab = a == Algorithm.SHARED_MEMORY ? model.arena(transport) : model.link(transport);
        double alpha = ab[0];
        double beta = ab[1];
        double steps;
        double moved;
        switch (op) {
            case ALL_REDUCE:
                switch (a) {
                    case RING: steps = 2 * (p - 1); moved = 2 * t * (p - 1) / p; break;
                    case TREE: steps = 2 * log; moved = 2 * t * log; break;
                    case HALVING_DOUBLING: steps = 2 * log + (isPow2(p) ? 0 : 2); moved = 2 * t * (p - 1) / p
                            + (isPow2(p) ? 0 : 2 * t); break;
                    case SHARED_MEMORY: steps = rounds(t) * (t <= io.jccl.algorithm.SharedMemoryAllReduce.SMALL_BYTES
                            ? 1 : 2); moved = t <= io.jccl.algorithm.SharedMemoryAllReduce.SMALL_BYTES ? t * (p + 1)
                            : 3 * t; break;
                    default: return Double.NaN;
                }
                break;
            case ALL_GATHER:
                t *= p; // output bytes
                switch (a) {
                    case RING: steps = p - 1; moved = t * (p - 1) / p; break;
                    case BRUCK: steps = log; moved = t * (p - 1) / p + t; break;
                    case SHARED_MEMORY: steps = rounds(t / p); moved = t; break;
                    default: return Double.NaN;
                }
                break;
            case REDUCE_SCATTER:
                t *= p; // input bytes
                switch (a) {
                    case RING: steps = p - 1; moved = t * (p - 1) / p; break;
                    case SHARED_MEMORY: steps = rounds(t); moved = t + t * (p - 1) / p; break;
                    default: return Double.NaN;
                }
                break;
            case BROADCAST:
                switch (a) {
                    case TREE: steps = log; moved = t * log; break;
                    case SHARED_MEMORY: steps = rounds(t); moved = t; break;
                    default: return Double.NaN;
                }
                break;
            case BARRIER:
                switch (a) {
                    case DISSEMINATION: steps = p - 1 + log; moved = 0; break;
                    case SHARED_MEMORY: steps = 1; moved = 0; break;
                    default: return Double.NaN;
                }
                break;
            default:
                return 0; // one algorithm only
        }
        return steps * alpha + moved * beta;
    }

    private double rounds(double bytes) {
        return Math.max(1, Math.ceil(bytes / arenaBytes));
    }

    private static boolean isPow2(int p) {
        return Integer.bitCount(p) == 1;
    }
}
