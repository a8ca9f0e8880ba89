package io.jccl.algorithm;

import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;
import io.jccl.transport.SharedArena;

import java.util.function.LongConsumer;

/**
 * The synchronisation patterns every shared-memory algorithm is made of, written once.
 *
 * <p>{@link #run The round loop}: a call too large for one exchange buffer runs in rounds; in each, every rank
 * publishes its part of the round into its exchange buffer (alternating between the two halves, so that a rank
 * fills one while slow peers still read the other), arrives (on the first round comparing every rank's signature),
 * and then reads its peers' parts. A call of no elements still runs one (empty) round, so that signatures are
 * compared.
 *
 * <p>Before a rank writes a round it {@link CollectiveCall#settle settles} the round before (free after a full
 * round; after an eager one it waits for every rank to have arrived there and compares their signatures).
 *
 * <p>Eagerly ({@link CollectiveCall#arriveEagerly}): a round of a rooted call (every round of a broadcast, a small
 * reduce's one round) arrives without waiting for the others; only the non-roots wait, for the root alone.
 *
 * <p>{@link #inPlace In place}: ranks that can read each other's buffers directly (threads)
 * expose them instead of copying them in, and synchronise once more at the end, so that no rank returns (and lets
 * its caller change the buffer) while a peer still reads it.
 */
final class SharedRounds {
    private SharedRounds() {
    }

    /** Writes this rank's part of one round into its exchange buffer {@code half}, before it arrives. */
    @FunctionalInterface
    interface Publish {
        /** Elements {@code [start, start + count)} of this rank's part. */
        void publish(int half, int start, int count);
    }

    /** Reads what the peers published for one round, once every rank has arrived; may synchronise again. */
    @FunctionalInterface
    interface Read {
        void read(long round, int half, int start, int count);
    }

    /**
     * Runs the rounds of a call of {@code total} elements per rank, at most {@code perRound} a round (at least
     * one round).
     */
    static void run(CollectiveCall call, SharedArena a, int total, int perRound, Publish publish, Read read) {
        if (perRound < 1) { // a round of nothing would never end the call
            throw new IllegalStateException("rank " + call.rank() + ": the shared exchange buffers (" + a.bufferBytes()
                    + " bytes) cannot hold a round of this call on " + call.size() + " ranks; give them more room "
                    + "(JCCL_LOCAL_ARENA_BYTES, JCCL_SHM_ARENA_BYTES) or choose a message algorithm");
        }
        int start = 0;
        boolean first = true;
        do {
            int count = Math.min(perRound, total - start);
            long round = begin(call, a);
            int half = (int) (round & 1);
            publish.publish(half, start, count);
            call.arrive(a, round, first);
            read.read(round, half, start, count);
            start += count;
            first = false;
        } while (start < total);
    }

    /**
     * The start of every round: draws its number and {@link CollectiveCall#settle settles} the round before; the
     * caller then writes buffer {@code round & 1}, arrives and reads. A call that fits one round does just that,
     * without {@link #run}'s callbacks (which a small call would allocate).
     */
    static long begin(CollectiveCall call, SharedArena a) {
        long round = a.nextRound();
        call.settle(a, round);
        return round;
    }

    /**
     * An in-place call: exposes {@code mine} (unless null: a registered buffer the caller exposed), arrives, runs
     * {@code read} (given the call's round, for further synchronisations) and leaves.
     */
    static void inPlace(CollectiveCall call, SharedArena a, Buf mine, LongConsumer read) {
        long round = arriveExposed(call, a, mine);
        read.accept(round);
        leave(call, a, round);
    }

    /**
     * The first synchronisation of an in-place call: exposes {@code mine} (unless null: a registered buffer the
     * caller exposed) and arrives; returns the call's round.
     */
    static long arriveExposed(CollectiveCall call, SharedArena a, Buf mine) {
        long round = begin(call, a);
        if (mine != null) {
            a.expose(mine);
        }
        call.arrive(a, round, true);
        return round;
    }

    /** The last synchronisation of an in-place call: every rank is done reading every exposed buffer. */
    static void leave(CollectiveCall call, SharedArena a, long round) {
        a.publish(SharedArena.LEFT, round);
        call.step(9, "shared-memory leave");
        call.awaitArena(a, SharedArena.LEFT, round);
    }

    /**
     * Copies slice r of {@code chunk} (of P balanced slices, {@code [m r / P, m (r + 1) / P)}) out of every other
     * rank r's buffer {@code half}, where r reduced it: the last step of a round whose reduction the ranks shared.
     */
    static void copyOtherSlices(SharedArena a, int half, Buf chunk, int me, int p) {
        int m = chunk.count();
        for (int r = 0; r < p; r++) {
            if (r != me) {
                int lo = sliceStart(m, r, p);
                int hi = sliceStart(m, r + 1, p);
                a.get(r, half, lo, chunk.slice(lo, hi - lo));
            }
        }
    }

    /** Slice {@code r} of {@code m} elements shared among {@code p} ranks: {@code [m r / p, m (r + 1) / p)}. */
    static int sliceStart(int m, int r, int p) {
        return (int) ((long) m * r / p);
    }

    /**
     * This rank's input for a round that the ranks reduce in slices (rank r reduces slice r, {@link #sliceStart}),
     * into its exchange buffer {@code half}: every slice but its own, which only this rank reduces, reading it from
     * its own array ({@link #reduceOwnSlice}).
     */
    static void putOthersSlices(CollectiveCall call, SharedArena a, int half, Buf chunk) {
        int p = call.size();
        int m = chunk.count();
        int lo = sliceStart(m, call.rank(), p);
        int hi = sliceStart(m, call.rank() + 1, p);
        if (lo > 0) {
            a.put(half, 0, chunk.slice(0, lo));
        }
        if (hi < m) {
            a.put(half, hi, chunk.slice(hi, m - hi));
        }
    }

    /**
     * Bytes staged at a time by {@link #reduceOwnSlice}: 32 KiB, as the arena stages its reductions, and
     * {@link io.jccl.transport.ArrayPool#MIN_POOLED_BYTES}, so that the scratch blocks are reused, not made per call.
     */
    private static final int STAGE_BYTES = 32 << 10;

    /**
     * The reduction of this rank's slice of a round whose other slices it put with {@link #putOthersSlices}: rank 0's
     * values op rank 1's op ... in rank order, as {@link #reduceRange} computes it, reading the peers' values from
     * their exchange buffers and this rank's from {@code mine} (its input, starting at element {@code at} of the
     * round). Block by block, while each is in the cache, the result goes back into {@code mine} when
     * {@code writeBack} and into this rank's exchange buffer where its input slice would have been (no rank reads
     * that) when {@code publish}. Rank 0 writing back reduces in {@code mine} itself; otherwise rank 0's values are
     * staged through a scratch block, since the operators need not commute bit for bit (MIN and MAX keep the first
     * of a tie or NaN), and this rank's own at the same offset, since C2 vectorises only {@code x[i] op= y[i]}.
     */
    static void reduceOwnSlice(CollectiveCall call, SharedArena a, int half, int at, Buf mine, ReduceOp op,
                               boolean writeBack, boolean publish) {
        reduceOwnSlice(call, a, half, at, mine, mine, op, writeBack, publish);
    }

    /**
     * As {@link #reduceOwnSlice(CollectiveCall, SharedArena, int, int, Buf, ReduceOp, boolean, boolean)}, this rank's
     * values read from {@code src} and the result written back into {@code mine} (of {@code src}'s length; they may
     * be one): an out-of-place reduction that reads {@code src} once, block by block, rather than after a copy of it
     * into {@code mine}.
     */
    static void reduceOwnSlice(CollectiveCall call, SharedArena a, int half, int at, Buf src, Buf mine, ReduceOp op,
                               boolean writeBack, boolean publish) {
        int p = call.size();
        int me = call.rank();
        io.jccl.DataType dt = mine.dtype();
        int n = mine.count();
        int stage = STAGE_BYTES / dt.sizeBytes();
        boolean inPlace = me == 0 && writeBack;
        Buf acc = inPlace ? null : call.scratch(dt, stage);
        Buf own = inPlace || me == 0 ? null : call.scratch(dt, stage);
        for (int done = 0; done < n; done += stage) {
            int k = Math.min(stage, n - done);
            if (inPlace) {
                if (src != mine) {
                    src.copyTo(done, mine, done, k);
                }
                Buf block = mine.slice(done, k);
                for (int r = 1; r < p; r++) {
                    a.reduce(r, half, at + done, block, op);
                }
                if (publish) {
                    a.put(half, at + done, block);
                }
                continue;
            }
            Buf part = acc.slice(0, k);
            if (me == 0) {
                src.copyTo(done, part, 0, k);
            } else {
                a.get(0, half, at + done, part);
            }
            for (int r = 1; r < p; r++) {
                if (r == me) {
                    src.copyTo(done, own, 0, k);
                    io.jccl.reduce.Reductions.reduce(dt, op, acc.array(), 0, own.array(), 0, k);
                } else {
                    a.reduce(r, half, at + done, part, op);
                }
            }
            if (writeBack) {
                part.copyTo(0, mine, done, k);
            }
            if (publish) {
                a.put(half, at + done, part);
            }
        }
        if (acc != null) {
            call.releaseScratch(acc);
        }
        if (own != null) {
            call.releaseScratch(own);
        }
    }

    /** {@code out = rank 0's range op rank 1's op ...}, reading every rank's buffer from element {@code at}. */
    static void reduceRange(SharedArena a, int half, int at, Buf out, ReduceOp op, int p) {
        a.get(0, half, at, out);
        for (int r = 1; r < p; r++) {
            a.reduce(r, half, at, out, op);
        }
    }
}
