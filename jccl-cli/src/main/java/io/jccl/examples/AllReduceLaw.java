package io.jccl.examples;

import io.jccl.Algorithm;
import io.jccl.algorithm.GlooChunking;

/**
 * The bytes one rank of an allreduce moves, by the algorithm that ran (docs/algorithms.md): what the message
 * algorithms send, and what the shared-memory algorithm writes into shared memory, which is what
 * {@code comm.counters().bytesSent(OpType.ALL_REDUCE)} counts for it. Exact, uneven chunks included.
 *
 * @param formula the law, in T (buffer bytes) and N (world size), e.g. {@code 2T(N-1)/N}
 * @param bytes   what it predicts for this rank
 */
public record AllReduceLaw(String formula, long bytes) {
    /** The shared-memory allreduce reduces rounds up to this size whole on every rank (16 KiB). */
    static final int SMALL_BYTES = io.jccl.algorithm.SharedMemoryAllReduce.SMALL_BYTES;

    /**
     * The law of {@code algorithm} for rank {@code rank} of {@code world}, a buffer of {@code count} elements of
     * {@code elementBytes}; {@code threads} whether the ranks are threads of one JVM (which read each other's buffers
     * in place). Null for an algorithm with no single-number law here (HIERARCHICAL: see
     * docs/algorithms.md).
     */
    public static AllReduceLaw of(Algorithm algorithm, int world, int rank, int count, int elementBytes,
                                  boolean threads) {
        long t = (long) count * elementBytes;
        switch (algorithm) {
            case RING:
            case ORDERED: {
                // reduce-scatter sends every chunk but this rank's, allgather every chunk but its successor's
                int[] b = GlooChunking.bounds(count, elementBytes, world);
                int prev = Math.floorMod(rank - 1, world);
                long sent = t - (long) (b[rank + 1] - b[rank]) * elementBytes + t
                        - (long) (b[prev + 1] - b[prev]) * elementBytes;
                return new AllReduceLaw("2T(N-1)/N", world == 1 ? 0 : sent);
            }
            case TREE: {
                int rounds = 32 - Integer.numberOfLeadingZeros(world - 1);
                int top = rank == 0 ? rounds : Integer.numberOfTrailingZeros(rank);
                int children = 0;
                for (int j = 0; j < top; j++) {
                    children += rank + (1 << j) < world ? 1 : 0;
                }
                String formula = rank == 0 ? "T ceil(log2 N)" : children == 0 ? "T (a leaf)"
                        : "T(1 + " + children + " children)";
                return new AllReduceLaw(formula, t * (children + (rank == 0 ? 0 : 1)));
            }
            case HALVING_DOUBLING:
                return halvingDoubling(world, rank, count, elementBytes);
            case SHARED_MEMORY:
                return sharedMemory(world, count, elementBytes, threads);
            default:
                return null;
        }
    }

    /** Halving sends half the current range a round, doubling the range owned; folded pairs add T each way. */
    private static AllReduceLaw halvingDoubling(int p, int r, int n, int elementBytes) {
        long t = (long) n * elementBytes;
        if (p == 1) {
            return new AllReduceLaw("0 (one rank)", 0);
        }
        int p2 = Integer.highestOneBit(p);
        int rem = p - p2;
        if (r < 2 * rem && (r & 1) == 0) {
            return new AllReduceLaw("T (folded into rank " + (r + 1) + ")", t);
        }
        int v = r < 2 * rem ? r / 2 : r - rem;
        int rounds = Integer.numberOfTrailingZeros(p2);
        int lo = 0;
        int hi = n;
        long sent = 0;
        int[] los = new int[rounds + 1];
        int[] his = new int[rounds + 1];
        los[0] = 0;
        his[0] = n;
        for (int k = 0; k < rounds; k++) {
            int d = p2 >> (k + 1);
            int mid = lo + (hi - lo) / 2;
            if ((v & d) == 0) {
                sent += hi - mid;
                hi = mid;
            } else {
                sent += mid - lo;
                lo = mid;
            }
            los[k + 1] = lo;
            his[k + 1] = hi;
        }
        for (int k = rounds - 1; k >= 0; k--) {
            sent += his[k + 1] - los[k + 1];
        }
        boolean folded = r < 2 * rem;
        return new AllReduceLaw(rem == 0 ? "2T(N-1)/N" : "2T(p2-1)/p2" + (folded ? " + T (its pair)" : "")
                + ", p2 = " + p2, sent * elementBytes + (folded ? t : 0));
    }

    /**
     * In rounds of one exchange buffer: a round up to 16 KiB writes it whole; a larger one writes the input but this
     * rank's own slice, which it reduces from its own array, and then its reduced slice in that slice's place: T in
     * all either way. Threads above 16 KiB expose their buffers instead: nothing is written.
     */
    private static AllReduceLaw sharedMemory(int p, int n, int elementBytes, boolean threads) {
        long t = (long) n * elementBytes;
        if (threads && t > SMALL_BYTES && p > 1) {
            return new AllReduceLaw("0 (peers read the buffer in place)", 0);
        }
        return new AllReduceLaw("T", t);
    }
}
