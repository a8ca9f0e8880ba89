package io.jccl.algorithm;

/**
 * How gloo's ring allreduce cuts a buffer into one chunk per rank, reproduced so that jccl sums in gloo's order.
 *
 * <p>gloo (allreduce.cc, ring; the version Debian's torch 1.13 links) uses segments of at most 1 MiB:
 * {@code numSegments = roundUp(max(ceil(bytes / 1 MiB), 2P), P)},
 * {@code segmentBytes = roundUp(ceil(bytes / numSegments), elementSize)}, and chunk {@code c} is the
 * {@code numSegments / P} consecutive segments from {@code c * numSegments / P}, clipped to the buffer. Chunks
 * can be unequal and trailing chunks empty.
 */
public final class GlooChunking {
    /** gloo's kMaxSegmentSize. */
    public static final long MAX_SEGMENT_BYTES = 1L << 20;

    private GlooChunking() {
    }

    /** Chunk bounds: chunk {@code c} is elements {@code [bounds[c], bounds[c + 1])}; {@code bounds.length == P + 1}. */
    public static int[] bounds(int count, int elementSize, int worldSize) {
        long total = (long) count * elementSize;
        long maxSegment = elementSize * Math.max(1, MAX_SEGMENT_BYTES / elementSize);
        long segments = Math.max(ceilDiv(total, maxSegment), 2L * worldSize);
        segments = ceilDiv(segments, worldSize) * worldSize;
        long segmentBytes = ceilDiv(ceilDiv(total, segments), elementSize) * elementSize;
        long chunkElements = (segments / worldSize) * segmentBytes / elementSize;
        int[] bounds = new int[worldSize + 1];
        for (int c = 0; c <= worldSize; c++) {
            bounds[c] = (int) Math.min(count, c * chunkElements);
        }
        return bounds;
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
