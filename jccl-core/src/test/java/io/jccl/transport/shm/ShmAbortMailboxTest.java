package io.jccl.transport.shm;

import io.jccl.DataType;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The abort mailboxes of a segment ({@link ShmAbortMailbox}), on a plain direct buffer laid out as a segment. */
class ShmAbortMailboxTest {
    private static final int CAPACITY = 4096;
    private static final int WORLD = 3;

    private static ByteBuffer segment() {
        return ByteBuffer.allocateDirect((int) ShmSegmentDescriptor.segmentLength(WORLD, CAPACITY, 4096, 0))
                .order(ByteOrder.nativeOrder());
    }

    private static Frame abort(int source, String reason) {
        byte[] bytes = reason.getBytes(StandardCharsets.UTF_8);
        return new Frame(new FrameHeader(FrameDescriptor.TYPE_ABORT, 0, DataType.UINT8.id(), 0xFF, 0xFF, source, -1,
                7, 0, 0, bytes.length, 42), bytes);
    }

    private static final class Collected implements ShmAbortMailbox.Sink {
        final List<String> got = new ArrayList<>();

        @Override
        public void abort(int src, Frame abort) {
            got.add(src + ":" + abort.header().source() + ":" + abort.header().stream() + ":"
                    + new String((byte[]) abort.payload(), StandardCharsets.UTF_8));
        }

        @Override
        public void corrupt(int src, String why) {
            got.add(src + ": corrupt: " + why);
        }
    }

    @Test
    void theOwnerShouldReadWhatEachSourcePostedOnceAndOnlyWhenTheDoorbellRang() {
        ByteBuffer seg = segment();
        ShmAbortMailbox.Reader reader = new ShmAbortMailbox.Reader(seg, WORLD, CAPACITY, 0);
        assertFalse(reader.rang());
        ShmAbortMailbox.post(seg, 1, CAPACITY, 0, abort(1, "first"));
        ShmAbortMailbox.post(seg, 1, CAPACITY, 1, abort(1, "second"));
        ShmAbortMailbox.post(seg, 2, CAPACITY, 0, abort(1, "from 2, on behalf of 1"));
        assertTrue(reader.rang());
        Collected c = new Collected();
        reader.collect(c);
        assertEquals(List.of("1:1:42:first", "1:1:42:second", "2:1:42:from 2, on behalf of 1"), c.got);
        assertFalse(reader.rang());
        reader.collect(c);
        assertEquals(3, c.got.size(), "nothing read twice");
        ShmAbortMailbox.post(seg, 1, CAPACITY, 2, abort(1, "third"));
        reader.collect(c);
        assertEquals("1:1:42:third", c.got.get(3));
    }

    @Test
    void aMailboxShouldKeepTheLastAbortsItsSlotsHold() {
        ByteBuffer seg = segment();
        for (int i = 0; i < ShmSegmentDescriptor.ABORT_SLOTS + 1; i++) {
            ShmAbortMailbox.post(seg, 1, CAPACITY, i, abort(1, "abort " + i));
        }
        Collected c = new Collected();
        new ShmAbortMailbox.Reader(seg, WORLD, CAPACITY, 0).collect(c);
        List<String> expected = new ArrayList<>();
        expected.add("1:1:42:abort " + ShmSegmentDescriptor.ABORT_SLOTS); // slot 0, posted over abort 0
        for (int i = 1; i < ShmSegmentDescriptor.ABORT_SLOTS; i++) {
            expected.add("1:1:42:abort " + i);
        }
        assertEquals(expected, c.got);
    }

    @Test
    void aLongReasonShouldBeCutToFitTheSlotAtACharacter() {
        ByteBuffer seg = segment();
        String ascii = "x".repeat(5000);
        String greek = "\u03b1".repeat(5000); // two bytes a character: a cut in the middle of one would be wrong
        ShmAbortMailbox.post(seg, 2, CAPACITY, 0, abort(2, ascii));
        ShmAbortMailbox.post(seg, 2, CAPACITY, 1, abort(2, "y" + greek));
        Collected c = new Collected();
        new ShmAbortMailbox.Reader(seg, WORLD, CAPACITY, 0).collect(c);
        int max = ShmAbortMailbox.maxReasonBytes();
        assertEquals("2:2:42:" + ascii.substring(0, max), c.got.get(0));
        String cut = c.got.get(1).substring("2:2:42:".length());
        assertFalse(cut.contains("\ufffd"), "a character cut in two");
        assertEquals("y" + greek.substring(0, (max - 1) / 2), cut);
    }

    @Test
    void aSlotBeingWrittenShouldBeReadAtTheNextCollect() {
        ByteBuffer seg = segment();
        ShmAbortMailbox.Reader reader = new ShmAbortMailbox.Reader(seg, WORLD, CAPACITY, 0);
        ShmAbortMailbox.post(seg, 1, CAPACITY, 0, abort(1, "done"));
        int seq = (int) ShmSegmentDescriptor.abortMailboxOffset(1, CAPACITY)
                + ShmSegmentDescriptor.ABORT_SEQUENCE_IN_SLOT;
        seg.putLong(seq, seg.getLong(seq) + 1); // odd: its source is writing it
        Collected c = new Collected();
        reader.collect(c);
        assertEquals(List.of(), c.got);
        assertTrue(reader.rang(), "the doorbell stays rung until the slot is read");
        seg.putLong(seq, seg.getLong(seq) + 1);
        reader.collect(c);
        assertEquals(List.of("1:1:42:done"), c.got);
        assertFalse(reader.rang());
    }

    @Test
    void aSlotThatHoldsNoAbortShouldBeReportedCorrupt() {
        ByteBuffer seg = segment();
        ShmAbortMailbox.post(seg, 1, CAPACITY, 0, abort(1, "fine"));
        int at = (int) ShmSegmentDescriptor.abortMailboxOffset(1, CAPACITY);
        seg.put(at + ShmSegmentDescriptor.ABORT_FRAME_IN_SLOT, (byte) 0); // the frame's magic spoilt
        Collected c = new Collected();
        new ShmAbortMailbox.Reader(seg, WORLD, CAPACITY, 0).collect(c);
        assertEquals(1, c.got.size());
        assertTrue(c.got.get(0).startsWith("1: corrupt: bad frame magic"), c.got.get(0));
    }

    @Test
    void theMailboxesShouldFitInTheRingsStrideWithoutGrowingIt() {
        for (int capacity = 4096; capacity <= (64 << 20); capacity <<= 1) {
            assertEquals(capacity + 4096, ShmSegmentDescriptor.ringStride(capacity));
            assertTrue(ShmSegmentDescriptor.abortMailboxOffset(0, capacity) + ShmSegmentDescriptor.ABORT_MAILBOX_LENGTH
                    <= ShmSegmentDescriptor.ringOffset(1, capacity));
        }
    }
}
