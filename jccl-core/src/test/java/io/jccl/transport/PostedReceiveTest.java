package io.jccl.transport;

import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a reader thread and a caller do to one {@link PostedReceive} through the {@link Inbox}, step by step: the
 * interleavings a transport test can only hit by chance (a cancel or an abort in the middle of a fill).
 */
class PostedReceiveTest {
    private static final int STREAM = Streams.collective(0);

    private static FrameHeader data(int step, int count) {
        return new FrameHeader(FrameDescriptor.TYPE_DATA, OpType.ALL_REDUCE.id(), DataType.FLOAT32.id(), 0xFF, 0xFF, 1,
                -1, 1, count, step, count, STREAM);
    }

    private static PostedReceive posted(float[] dst) {
        return new PostedReceive(new Buf(DataType.FLOAT32, dst, 0, dst.length), null) {
            @Override
            protected boolean accepts(FrameHeader h) {
                return h.payloadCount() == dst.length;
            }
        };
    }

    private static ByteBuffer floats(float... v) {
        ByteBuffer b = ByteBuffer.allocateDirect(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) {
            b.putFloat(f);
        }
        return b.flip();
    }

    @Test
    void aCancelInTheMiddleOfAFillStopsEveryLaterWrite() throws InterruptedException {
        Inbox inbox = new Inbox(2);
        float[] dst = new float[4];
        PostedReceive p = posted(dst);
        inbox.post(1, STREAM, p);
        FrameHeader h = data(0, 4);
        assertSame(p, inbox.claim(1, h), "the reader claims the waiting receive");
        assertTrue(p.place(floats(1, 2), 0, 2, null));
        p.cancel();
        ByteBuffer rest = floats(3, 4);
        assertFalse(p.place(rest, 2, 2, null), "a cancelled receive takes no more bytes");
        assertFalse(rest.hasRemaining(), "the reader still moves past them");
        inbox.filled(1, h, p);
        assertArrayEquals(new float[] {1, 2, 0, 0}, dst);
        assertNull(p.result(), "a cancelled receive has no result");
        assertNull(inbox.receive(1, STREAM, System.nanoTime() + 1_000_000L), "the drained frame is gone");
    }

    @Test
    void anAbortInTheMiddleOfAFillEndsTheReceiveAndStopsTheWrites() throws InterruptedException {
        Inbox inbox = new Inbox(2);
        float[] dst = new float[4];
        PostedReceive p = posted(dst);
        inbox.post(1, STREAM, p);
        FrameHeader h = data(0, 4);
        assertSame(p, inbox.claim(1, h));
        Frame lost = Frame.peerGone(1, "connection to rank 1 lost");
        inbox.peerLost(lost);
        assertSame(lost, inbox.receive(1, STREAM, System.nanoTime() + 1_000_000_000L, p));
        assertFalse(p.place(floats(1, 2, 3, 4), 0, 4, null));
        assertArrayEquals(new float[4], dst);
    }

    @Test
    void aFrameQueuedBeforeThePostEndsItAtOnceAndLaterFramesGoToLaterPosts() throws InterruptedException {
        Inbox inbox = new Inbox(2);
        Frame early = new Frame(data(0, 1), new float[] {9});
        inbox.deliver(1, early);
        PostedReceive first = posted(new float[1]);
        PostedReceive second = posted(new float[1]);
        inbox.post(1, STREAM, first);
        inbox.post(1, STREAM, second);
        assertSame(early, first.result(), "the queued frame went to the first post");
        assertNull(inbox.claim(1, data(1, 2)), "a header the waiting post does not accept is not claimed");
        Frame whole = new Frame(data(1, 1), new float[] {7});
        inbox.deliver(1, whole);
        assertSame(whole, inbox.receive(1, STREAM, System.nanoTime() + 1_000_000L, second));
        assertNotNull(second.result());
    }
}
