package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;
import io.jccl.transport.SharedArena;

/**
 * Reduce to a root through memory every rank can read ({@link SharedArena}), the mirror of the eager broadcast.
 * <ul>
 *   <li>Up to {@link SharedMemoryAllReduce#SMALL_BYTES} and one exchange buffer, <b>eager</b>: every rank copies
 *       its input into its exchange buffer and publishes its arrival; the others return at once, and the root waits
 *       for everyone, compares every signature and reduces every rank's buffer into its own
 *       ({@link CollectiveCall#arriveGathered}). A rank whose call differs fails the root at once and every other
 *       rank at its next shared-memory call, when it settles this round.</li>
 *   <li>Larger, in rounds of at most one exchange buffer (the round loop of {@code SharedRounds}): every rank copies
 *       its part in and arrives (the first round compares every signature); rank r reduces slice r (of P balanced
 *       slices) reading every rank's buffer; every other rank writes it back into its own buffer, publishes
 *       {@code REDUCED} and goes on; the root, whose slice is in place, waits for every {@code REDUCED} and copies
 *       the other slices out. The reduction work is shared, and only the root waits twice.</li>
 * </ul>
 * Only the root's buffer changes. Every element is reduced in rank order (((x0 op x1) op x2) ...), as
 * {@link SharedMemoryAllReduce} does, so the root's result is the shared-memory allreduce's, within the bound of
 * gloo's. Cost: {@link #predictMicros}, against the ring reduce's messages.
 */
public final class SharedMemoryReduce extends SharedMemoryAlgorithm {
    @Override
    public OpType operation() {
        return OpType.REDUCE;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        reduce(call, operands.data(), operands.root(), operands.reduceOp());
    }

    /**
     * Small calls: one synchronisation, every rank writes T and the root reads P T. Larger rounds: two, every rank
     * writes T(P-1)/P (its input but its own slice) and reads T(P-1)/P (its slice of every other rank), a non-root
     * also writes its result slice T/P and the root reads the others', T(P-1)/P (T = buffer bytes); modelled as 3T.
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        boolean small = t <= SharedMemoryAllReduce.SMALL_BYTES;
        return arenaMicros(topology, arena, rounds(t, topology) * (small ? 1 : 2), small ? t * (p + 1) : 3 * t);
    }

    public static void reduce(CollectiveCall call, Buf data, int root, ReduceOp op) {
        SharedArena a = call.arena();
        int p = call.size();
        int elem = data.dtype().sizeBytes();
        int n = data.count();
        if (a.canExpose() && (long) n * elem > SharedMemoryAllReduce.SMALL_BYTES && p > 1) {
            reduceInPlace(call, a, data, root, op);
            return;
        }
        if ((long) n * elem <= Math.min(SharedMemoryAllReduce.SMALL_BYTES, a.bufferBytes())) { // one round
            long round = SharedRounds.begin(call, a);
            int half = (int) (round & 1);
            a.put(half, 0, data);
            call.arriveGathered(a, round, root);
            boolean isRoot = call.rank() == root;
            if (isRoot) {
                SharedRounds.reduceRange(a, half, 0, data, op, p);
            }
            call.countShared((long) n * elem, isRoot ? (long) n * elem * (p - 1) : 0);
            return;
        }
        SharedRounds.run(call, a, n, a.bufferBytes() / elem,
                (half, start, m) -> SharedRounds.putOthersSlices(call, a, half, data.slice(start, m)),
                (round, half, start, m) -> reduceRound(call, a, round, half, data.slice(start, m), root, op));
    }

    /**
     * Ranks that read each other's buffers in place (threads): every rank exposes its buffer and arrives; rank r
     * reduces slice r of every rank's buffer, in rank order, and writes it straight into the root's buffer (only
     * rank r reads or writes slice r of it); every rank publishes {@code REDUCED} and waits for every other's, after
     * which nobody reads any buffer. Two synchronisations, nothing copied in or out of exchange buffers (the rounds
     * copy each input in and the root copies the others' slices out).
     */
    private static void reduceInPlace(CollectiveCall call, SharedArena a, Buf data, int root, ReduceOp op) {
        int p = call.size();
        int me = call.rank();
        int m = data.count();
        int lo = SharedRounds.sliceStart(m, me, p);
        int hi = SharedRounds.sliceStart(m, me + 1, p);
        long round = SharedRounds.arriveExposed(call, a, data);
        Buf acc = call.scratch(data.dtype(), hi - lo);
        SharedRounds.reduceRange(a, SharedArena.EXPOSED, lo, acc, op, p);
        a.putExposed(root, lo, acc);
        call.releaseScratch(acc);
        a.publish(SharedArena.REDUCED, round);
        call.step(1, "shared-memory reduced");
        call.awaitArena(a, SharedArena.REDUCED, round);
        int elem = data.dtype().sizeBytes();
        call.countShared(me == root ? 0 : (long) (hi - lo) * elem, (long) (hi - lo) * (p - 1) * elem);
    }

    /** After every rank arrived with its copy of {@code chunk} in buffer {@code half}: the round's reduction. */
    private static void reduceRound(CollectiveCall call, SharedArena a, long round, int half, Buf chunk, int root,
                                    ReduceOp op) {
        int p = call.size();
        int me = call.rank();
        int elem = chunk.dtype().sizeBytes();
        int m = chunk.count();
        int lo = SharedRounds.sliceStart(m, me, p);
        int hi = SharedRounds.sliceStart(m, me + 1, p);
        boolean isRoot = me == root;
        // the root's result goes into its buffer; a non-root's input stays as it was, its result goes to the root
        SharedRounds.reduceOwnSlice(call, a, half, lo, chunk.slice(lo, hi - lo), op, isRoot, !isRoot);
        if (!isRoot) {
            a.publish(SharedArena.REDUCED, round);
            call.countShared((long) m * elem, (long) (hi - lo) * (p - 1) * elem);
            return;
        }
        a.publish(SharedArena.REDUCED, round); // its own, so that one wait covers every rank
        call.step(2, "shared-memory reduced");
        call.awaitArena(a, SharedArena.REDUCED, round);
        SharedRounds.copyOtherSlices(a, half, chunk, me, p);
        call.countShared((long) (m - (hi - lo)) * elem, ((long) (hi - lo) * (p - 1) + (m - (hi - lo))) * elem);
    }
}
