package io.jccl.transport.shm;

import io.jccl.transport.FrameFormatException;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ShmRingTest {
    private static final int CAPACITY = 4096;

    private static ByteBuffer segment() {
        // a ring at a page-aligned offset of a bigger buffer, as in a segment
        return ByteBuffer.allocateDirect(2 * 4096 + ShmSegmentDescriptor.ringStride(CAPACITY))
                .order(ByteOrder.nativeOrder());
    }

    private static boolean write(ShmRing ring, int type, byte[] message) {
        int index = ring.tryClaim(type, message.length);
        if (index < 0) {
            return false;
        }
        ring.message(index, message.length).put(message);
        ring.commit();
        return true;
    }

    private static byte[] message(int length, int seed) {
        byte[] m = new byte[length];
        for (int i = 0; i < length; i++) {
            m[i] = (byte) (seed * 31 + i);
        }
        return m;
    }

    private static List<byte[]> readAll(ShmRing ring, List<Integer> types) {
        List<byte[]> out = new ArrayList<>();
        ring.read((type, b) -> {
            byte[] m = new byte[b.remaining()];
            b.get(m);
            out.add(m);
            types.add(type);
        });
        return out;
    }

    @Test
    void messagesShouldArriveInOrderAcrossManyWrapArounds() {
        ByteBuffer seg = segment();
        ShmRing producer = ShmRing.producer(seg, 4096, CAPACITY);
        ShmRing consumer = ShmRing.consumer(seg, 4096, CAPACITY);
        assertEquals(CAPACITY / 8, producer.maxMessageLength());
        int sent = 0;
        int received = 0;
        for (int round = 0; round < 2000; round++) {
            // lengths that are not multiples of 8 and do not divide the capacity: records end anywhere
            int length = (round * 37) % (producer.maxMessageLength() + 1);
            byte[] m = message(length, sent);
            while (!write(producer, 1 + sent % 2, m)) {
                List<Integer> types = new ArrayList<>();
                for (byte[] got : readAll(consumer, types)) {
                    assertArrayEquals(message(got.length, received), got, "message " + received);
                    assertEquals(1 + received % 2, types.get(0));
                    types.remove(0);
                    received++;
                }
            }
            sent++;
        }
        List<Integer> types = new ArrayList<>();
        for (byte[] got : readAll(consumer, types)) {
            assertArrayEquals(message(got.length, received), got);
            received++;
        }
        assertEquals(sent, received);
    }

    @Test
    void aFullRingShouldRefuseUntilTheConsumerReads() {
        ByteBuffer seg = segment();
        ShmRing producer = ShmRing.producer(seg, 4096, CAPACITY);
        ShmRing consumer = ShmRing.consumer(seg, 4096, CAPACITY);
        byte[] m = message(producer.maxMessageLength(), 1); // 512 bytes + 8 of header
        int written = 0;
        while (write(producer, 1, m)) {
            written++;
        }
        assertEquals(CAPACITY / (m.length + 8), written);
        assertEquals(written, consumer.read((type, b) -> { }));
        assertTrue(write(producer, 1, m), "room again once read");
    }

    @Test
    void aRecordThatDoesNotFitBeforeTheEndShouldGoToTheStartAfterPadding() {
        ByteBuffer seg = segment();
        ShmRing producer = ShmRing.producer(seg, 4096, CAPACITY);
        ShmRing consumer = ShmRing.consumer(seg, 4096, CAPACITY);
        // 7 records of 512 + 8 bytes: 3640 bytes used, 456 left before the end
        for (int i = 0; i < 7; i++) {
            assertTrue(write(producer, 1, message(512, i)));
        }
        assertEquals(7, consumer.read((type, b) -> { }));
        int index = producer.tryClaim(2, 500);
        assertEquals(8, index, "the record starts at index 0, its message after the 8-byte header");
        producer.message(index, 500).put(message(500, 9));
        producer.commit();
        List<Integer> types = new ArrayList<>();
        List<byte[]> got = readAll(consumer, types);
        assertEquals(1, got.size(), "the padding is skipped");
        assertEquals(List.of(2), types);
        assertArrayEquals(message(500, 9), got.get(0));
    }

    @Test
    void claimsShouldBeChecked() {
        ShmRing producer = ShmRing.producer(segment(), 4096, CAPACITY);
        assertThrows(IllegalArgumentException.class, () -> producer.tryClaim(1, producer.maxMessageLength() + 1));
        assertThrows(IllegalArgumentException.class, () -> producer.tryClaim(0, 8));
        assertThrows(IllegalStateException.class, producer::commit);
    }

    @Test
    void aCorruptRecordShouldBeReportedNotFollowed() {
        ByteBuffer seg = segment();
        ShmRing producer = ShmRing.producer(seg, 4096, CAPACITY);
        ShmRing consumer = ShmRing.consumer(seg, 4096, CAPACITY);
        assertTrue(write(producer, 1, message(16, 1)));
        assertTrue(write(producer, 1, message(16, 2)));
        seg.putInt(4096 + 24, 1 << 20); // the second record's length: far beyond the ring
        List<byte[]> got = new ArrayList<>();
        FrameFormatException e = assertThrows(FrameFormatException.class, () -> consumer.read((type, b) -> {
            byte[] m = new byte[b.remaining()];
            b.get(m);
            got.add(m);
        }));
        assertTrue(e.getMessage().contains("impossible record"), e.getMessage());
        assertEquals(1, got.size(), "the record before the corrupt one is handed over");
        seg.putLong(4096 + CAPACITY + ShmSegmentDescriptor.RING_TAIL_OFFSET, -5);
        assertThrows(FrameFormatException.class, () -> consumer.read((type, b) -> { }));
    }
}
