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
            allReduceRegistered(call, tensor, op, divideBy);
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
        // a peer may have passed a buffer from Communicator.allocate (runRegistered), exposed rather than put
        boolean registrable = (long) data.count() * elem > SMALL_BYTES && p > 1;
        if ((long) data.count() * elem <= a.bufferBytes()) { // one round, without run's callbacks
            long round = SharedRounds.begin(call, a);
            int half = (int) (round & 1);
            putInput(call, a, half, data);
            call.arrive(a, round, true);
            if (registrable) {
                awaitLateInputs(call, a, round, false);
            }
            reduceRound(call, a, round, half, data, op);
            return;
        }
        SharedRounds.run(call, a, data.count(), a.bufferBytes() / elem,
                (half, start, m) -> putInput(call, a, half, data.slice(start, m)),
                (round, half, start, m) -> {
                    if (start == 0) {
                        awaitLateInputs(call, a, round, false);
                    }
                    reduceRound(call, a, round, half, data.slice(start, m), op);
                });
    }

    /**
     * After every rank arrived at the first round of a call that a buffer from {@code Communicator.allocate} may
     * serve (above {@link #SMALL_BYTES}): where some ranks exposed one ({@link #allReduceRegistered}) and others
     * put their input into their exchange buffers (arrays, or buffers that could not be exposed), the exposing
     * ranks now put theirs as well and every rank waits for them (the LEFT counter at this round), so that the
     * call runs as the exchange buffers' rounds on every rank. Returns whether the call is such a mixed one. No
     * extra synchronisation where every rank did the same. {@code exposed}: whether this rank exposed its buffer
     * (it then puts its input late and releases the others in {@link #lateRounds}).
     */
    private static boolean awaitLateInputs(CollectiveCall call, SharedArena a, long round, boolean exposed) {
        int p = call.size();
        boolean mixed = false;
        for (int r = 0; r < p && !mixed; r++) {
            if (r != call.rank()) {
                mixed = a.exposedFor(r, round) != exposed;
            }
        }
        if (mixed && !exposed) {
            a.publish(SharedArena.LEFT, round);
            call.step(1, "shared-memory late inputs");
            call.awaitArena(a, SharedArena.LEFT, round);
        }
        return mixed;
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
        inPlace(call, a, SharedRounds.arriveExposed(call, a, data), data.dtype(), data.count(), op, 1);
    }

    /**
     * Allreduce of a buffer in the shared registered region ({@code Communicator.allocate}), which the caller has
     * exposed with {@link SharedArena#exposeRegistered}: peers read it in place, so nothing is copied in or out of
     * an exchange buffer. {@code divideBy} divides the result (AVG: the world size; else 1). Where some peer did
     * not expose its input (it passed an array: a correct program may mix them), the call runs as the exchange
     * buffers' rounds instead, this rank's tensor read and written through them ({@link #awaitLateInputs}): the
     * same sums in the same order.
     */
    static void allReduceRegistered(CollectiveCall call, io.jccl.Tensor tensor, ReduceOp op, int divideBy) {
        SharedArena a = call.arena();
        io.jccl.DataType dtype = tensor.dtype();
        int m = tensor.count();
        long round = SharedRounds.begin(call, a);
        a.markExposed(round);
        call.arrive(a, round, true);
        if (awaitLateInputs(call, a, round, true)) {
            Buf data = Buf.over(dtype, tensor.byteBuffer().slice().order(tensor.byteOrder()), 0, m);
            lateRounds(call, a, round, data, op);
            if (divideBy > 1) {
                io.jccl.reduce.Reductions.divide(data, divideBy);
            }
            return;
        }
        inPlace(call, a, round, dtype, m, op, divideBy);
    }

    /**
     * The exchange buffers' rounds of {@link #allReduce} for a rank that arrived at the first, {@code first}, with
     * its buffer exposed and nothing put: it puts that round's input now, releases the peers that wait for it
     * ({@link #awaitLateInputs}), and goes on as they do.
     */
    private static void lateRounds(CollectiveCall call, SharedArena a, long first, Buf data, ReduceOp op) {
        int total = data.count();
        int perRound = a.bufferBytes() / data.dtype().sizeBytes();
        long round = first;
        for (int start = 0, count; start < total; start += count) {
            count = Math.min(perRound, total - start);
            if (start > 0) {
                round = SharedRounds.begin(call, a);
            }
            int half = (int) (round & 1);
            Buf chunk = data.slice(start, count);
            putInput(call, a, half, chunk);
            if (start == 0) {
                a.publish(SharedArena.LEFT, round);
                call.step(1, "shared-memory late inputs");
                call.awaitArena(a, SharedArena.LEFT, round);
            } else {
                call.arrive(a, round, false);
            }
            reduceRound(call, a, round, half, chunk, op);
        }
    }

    /**
     * The in-place allreduce of every rank's exposed buffer of {@code m} elements, once every rank arrived at
     * {@code round} with it exposed: reduces slice r reading every rank's buffer into a scratch array and writes it
     * into its own slice; arrives again; copies the other slices out of their owners' buffers; and arrives a third
     * time, so that no rank returns (and lets its caller change the buffer) while a peer still reads it. Reads about
     * 2T, writes T per rank, three synchronisations.
     */
    private static void inPlace(CollectiveCall call, SharedArena a, long round, io.jccl.DataType dtype, int m,
                                ReduceOp op, int divideBy) {
        int p = call.size();
        int me = call.rank();
        int elem = dtype.sizeBytes();
        int lo = SharedRounds.sliceStart(m, me, p);
        int hi = SharedRounds.sliceStart(m, me + 1, p);
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
        SharedRounds.leave(call, a, round);
        call.countShared(0, ((long) (hi - lo) * (p - 1) + (m - (hi - lo))) * elem);
    }
}
