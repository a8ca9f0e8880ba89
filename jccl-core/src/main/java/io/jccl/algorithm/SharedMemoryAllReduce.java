package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;
import io.jccl.transport.SharedArena;

/**
 * Allreduce through memory every rank can read ({@link SharedArena}), without messages: in rounds of at most one
 * exchange buffer (the round loop of {@code SharedRounds}), every rank copies its input into its own buffer and
 * arrives; then
 * <ul>
 *   <li>small rounds (at most {@link #SMALL_BYTES}): every rank reduces the whole round itself, reading every
 *       rank's buffer: one synchronisation per round;</li>
 *   <li>larger rounds: rank r reduces slice r (of P balanced slices) reading every rank's buffer, writes the result
 *       into its output and back into its own buffer, and arrives again; then every rank copies the other slices'
 *       results: two synchronisations, and the reduction work is shared.</li>
 * </ul>
 * Cost: {@link #predictMicros}; against the ring's 2T(P-1)/P bytes sent and as many received, in 2(P-1)
 * steps. Exchange buffers alternate between rounds, so a rank fills one while slow peers still read the other.
 *
 * <p>Ranks that are threads skip the copy in for calls above {@link #SMALL_BYTES}: peers read each other's buffers
 * in place (see {@code allReduceInPlace}).
 *
 * <p>Every element is reduced in rank order (((x0 op x1) op x2) ...) on one rank, so every rank gets the same bits;
 * the order is not gloo's ring order, so float results agree with gloo within the bound of docs/verification.md.
 * The first round compares every rank's signature, so a mismatch fails every rank at once.
 */
public final class SharedMemoryAllReduce extends SharedMemoryAlgorithm {
    /** Rounds up to this size are reduced whole by every rank. */
    public static final int SMALL_BYTES = 16 << 10;

    @Override
    public OpType operation() {
        return OpType.ALL_REDUCE;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allReduce(call, operands.data(), operands.reduceOp());
    }

    /** A buffer from {@code Communicator.allocate}, in native order, above {@link #SMALL_BYTES}: read in place. */
    @Override
    public boolean runRegistered(CollectiveCall call, io.jccl.Tensor tensor, ReduceOp op, int divideBy) {
        SharedArena a = call.arena();
        if (tensor.isBuffer() && call.size() > 1 && tensor.byteOrder() == java.nio.ByteOrder.nativeOrder()
                && tensor.byteSize() > SMALL_BYTES && a.exposeRegistered(tensor)) {
            allReduceRegistered(call, tensor.dtype(), tensor.count(), op, divideBy);
            return true;
        }
        return false;
    }

    /**
     * One synchronisation per round of at most {@link #SMALL_BYTES}, in which every rank writes T and reads T from
     * each of the P buffers, its own included (T = buffer bytes); two per larger round, in which every rank writes
     * T(P-1)/P (its input but for its own slice, which it reduces from its own array) + T/P (result slice) and reads
     * T(P-1)/P (its slice of every other rank) + T(P-1)/P (the others' results): under 3T in all, modelled as 3T.
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        boolean small = t <= SMALL_BYTES;
        return arenaMicros(topology, arena, rounds(t, topology) * (small ? 1 : 2), small ? t * (p + 1) : 3 * t);
    }

    public static void allReduce(CollectiveCall call, Buf data, ReduceOp op) {
        SharedArena a = call.arena();
        int p = call.size();
        int elem = data.dtype().sizeBytes();
        if (a.canExpose() && (long) data.count() * elem > SMALL_BYTES && p > 1) {
            allReduceInPlace(call, a, data, op);
            return;
        }
        if ((long) data.count() * elem <= a.bufferBytes()) { // one round, without run's callbacks
            long round = SharedRounds.begin(call, a);
            int half = (int) (round & 1);
            putInput(call, a, half, data);
            call.arrive(a, round, true);
            reduceRound(call, a, round, half, data, op);
            return;
        }
        SharedRounds.run(call, a, data.count(), a.bufferBytes() / elem,
                (half, start, m) -> putInput(call, a, half, data.slice(start, m)),
                (round, half, start, m) -> reduceRound(call, a, round, half, data.slice(start, m), op));
    }

    /** After every rank arrived with its copy of {@code chunk} in buffer {@code half}: the round's reduction. */
    private static void reduceRound(CollectiveCall call, SharedArena a, long round, int half, Buf chunk, ReduceOp op) {
        int p = call.size();
        int me = call.rank();
        int elem = chunk.dtype().sizeBytes();
        int m = chunk.count();
        if (whole(m, elem, p)) {
            SharedRounds.reduceRange(a, half, 0, chunk, op, p);
            call.countShared((long) m * elem, (long) m * elem * (p - 1));
            return;
        }
        int lo = SharedRounds.sliceStart(m, me, p);
        int hi = SharedRounds.sliceStart(m, me + 1, p);
        Buf mine = chunk.slice(lo, hi - lo);
        SharedRounds.reduceOwnSlice(call, a, half, lo, mine, op, true, true); // in place, and for the peers
        a.publish(SharedArena.REDUCED, round);
        call.step(2, "shared-memory reduced");
        call.awaitArena(a, SharedArena.REDUCED, round);
        SharedRounds.copyOtherSlices(a, half, chunk, me, p);
        call.countShared((long) m * elem, ((long) (hi - lo) * (p - 1) + (m - (hi - lo))) * elem);
    }

    /** Whether a round of {@code m} elements is reduced whole by every rank ({@link #SMALL_BYTES}), not in slices. */
    private static boolean whole(int m, int elem, int p) {
        return (long) m * elem <= SMALL_BYTES || p == 1;
    }

    /**
     * This rank's input for one round into its exchange buffer {@code half}: all of {@code chunk} when every rank
     * reduces the round whole, else every slice but its own ({@link SharedRounds#putOthersSlices}).
     */
    private static void putInput(CollectiveCall call, SharedArena a, int half, Buf chunk) {
        if (whole(chunk.count(), chunk.dtype().sizeBytes(), call.size())) {
            a.put(half, 0, chunk);
        } else {
            SharedRounds.putOthersSlices(call, a, half, chunk);
        }
    }

    /**
     * Ranks that can read each other's buffers in place (threads): no copy in, no rounds (see {@link #inPlace}).
     */
    private static void allReduceInPlace(CollectiveCall call, SharedArena a, Buf data, ReduceOp op) {
        inPlace(call, a, data, data.dtype(), data.count(), op, 1);
    }

    /**
     * Allreduce of a buffer in the shared registered region ({@code Communicator.allocate}), which the caller has
     * exposed with {@link SharedArena#exposeRegistered}: peers read it in place, so nothing is copied in or out of
     * an exchange buffer. {@code divideBy} divides the result (AVG: the world size; else 1).
     */
    public static void allReduceRegistered(CollectiveCall call, io.jccl.DataType dtype, int count, ReduceOp op,
                                           int divideBy) {
        inPlace(call, call.arena(), null, dtype, count, op, divideBy);
    }

    /**
     * The in-place allreduce of every rank's exposed buffer of {@code m} elements: every rank arrives; reduces slice
     * r reading every rank's buffer into a scratch array and writes it into its own slice; arrives again; copies the
     * other slices out of their owners' buffers; and arrives a third time, so that no rank returns (and lets its
     * caller change the buffer) while a peer still reads it. Reads about 2T, writes T per rank, three
     * synchronisations.
     */
    private static void inPlace(CollectiveCall call, SharedArena a, Buf mine, io.jccl.DataType dtype, int m,
                                ReduceOp op, int divideBy) {
        int p = call.size();
        int me = call.rank();
        int elem = dtype.sizeBytes();
        int lo = SharedRounds.sliceStart(m, me, p);
        int hi = SharedRounds.sliceStart(m, me + 1, p);
        SharedRounds.inPlace(call, a, mine, round -> {
            Buf acc = call.scratch(dtype, hi - lo);
            SharedRounds.reduceRange(a, SharedArena.EXPOSED, lo, acc, op, p);
            if (divideBy > 1) {
                io.jccl.reduce.Reductions.divide(acc, divideBy);
            }
            a.put(SharedArena.EXPOSED, lo, acc);
            call.releaseScratch(acc);
            a.publish(SharedArena.REDUCED, round);
            call.step(1, "shared-memory reduced");
            call.awaitArena(a, SharedArena.REDUCED, round);
            for (int r = 0; r < p; r++) {
                if (r != me) {
                    int rlo = SharedRounds.sliceStart(m, r, p);
                    int rhi = SharedRounds.sliceStart(m, r + 1, p);
                    a.copyExposed(r, rlo, rhi - rlo, dtype);
                }
            }
        });
        call.countShared(0, ((long) (hi - lo) * (p - 1) + (m - (hi - lo))) * elem);
    }
}
