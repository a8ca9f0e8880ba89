package io.jccl.transport.shm;

import io.jccl.transport.HostCpus;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The CPU fields of the segment header, and the count of cores that the ranks of a host make from them. */
class ShmSegmentCoresTest {
    private static ByteBuffer header(int rank) {
        // direct, as a mapped segment is: JDK 21+ refuses the release store of "ready" on a heap buffer
        ByteBuffer b = ByteBuffer.allocateDirect(ShmSegmentDescriptor.HEADER_LENGTH).order(ByteOrder.nativeOrder());
        ShmSegment.writeHeader(b, rank, 2, 4096, 4096, 0, 1, 2);
        return b;
    }

    private static void bindTo(ByteBuffer header, int cpu) {
        for (int w = 0; w < HostCpus.WORDS; w++) {
            header.putLong(ShmSegmentDescriptor.ALLOWED_CPUS_OFFSET + 8 * w, w == cpu / 64 ? 1L << (cpu % 64) : 0);
        }
        header.putInt(ShmSegmentDescriptor.AVAILABLE_PROCESSORS_OFFSET, 1);
    }

    @Test
    void shouldPublishThisProcessesAffinityAndProcessorCount() {
        ByteBuffer b = header(0);
        long[] words = new long[HostCpus.WORDS];
        for (int w = 0; w < words.length; w++) {
            words[w] = b.getLong(ShmSegmentDescriptor.ALLOWED_CPUS_OFFSET + 8 * w);
        }
        assertArrayEquals(HostCpus.allowed(), words);
        assertEquals(Runtime.getRuntime().availableProcessors(),
                b.getInt(ShmSegmentDescriptor.AVAILABLE_PROCESSORS_OFFSET));
    }

    @Test
    void shouldCountTwoCoresForTwoRanksBoundToOneEach() {
        ByteBuffer a = header(0);
        ByteBuffer b = header(1);
        bindTo(a, 0);
        bindTo(b, 1);
        assertEquals(2, ShmSegment.cores(new ByteBuffer[] {a, b}));
        bindTo(b, 0);
        assertEquals(1, ShmSegment.cores(new ByteBuffer[] {a, b}));
    }
}
