package io.jccl.transport;

import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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

    /**
     * The socket's bytes straight into direct memory ({@link PostedReceive#fill}): a cancel between two reads leaves
     * the second read's bytes where they are (in the channel, for the reader to drain), drops bytes the reader had
     * read into its own buffer, and leaves the destination as the first read left it.
     */
    @Test
    void aCancelBetweenTwoFillsFromAChannelStopsTheSecond() throws Exception {
        Inbox inbox = new Inbox(2);
        ByteBuffer mem = ByteBuffer.allocateDirect(16).order(ByteOrder.LITTLE_ENDIAN);
        Buf dst = Buf.over(DataType.FLOAT32, mem, 0, 4);
        PostedReceive p = new PostedReceive(dst, null) {
            @Override
            protected boolean accepts(FrameHeader h) {
                return h.payloadCount() == 4;
            }
        };
        assertTrue(p.fillable());
        inbox.post(1, STREAM, p);
        FrameHeader h = data(0, 4);
        assertSame(p, inbox.claim(1, h));
        java.nio.channels.Pipe pipe = java.nio.channels.Pipe.open();
        try {
            pipe.source().configureBlocking(false);
            ByteBuffer window = dst.bytes();
            assertEquals(0, p.fill(pipe.source(), window), "nothing sent yet: a non-blocking read returns at once");
            pipe.sink().write(floats(1, 2));
            assertEquals(8, p.fill(pipe.source(), window));
            p.cancel();
            pipe.sink().write(floats(3, 4));
            assertEquals(PostedReceive.GIVEN_UP, p.fill(pipe.source(), window));
            ByteBuffer waited = floats(5, 6);
            assertFalse(p.fill(waited, window), "bytes the reader waited for are dropped too");
            assertFalse(waited.hasRemaining(), "and consumed");
            ByteBuffer left = ByteBuffer.allocate(16);
            assertEquals(8, pipe.source().read(left), "the cancelled fill left the rest in the channel");
        } finally {
            pipe.source().close();
            pipe.sink().close();
        }
        inbox.filled(1, h, p);
        assertArrayEquals(new float[] {1, 2, 0, 0}, (float[]) dst.copyOf(0, 4).array());
        assertNull(p.result());
    }

    @Test
    void onlyACopyIntoLittleEndianMemoryIsFilledFromTheChannel() {
        ByteBuffer le = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer be = ByteBuffer.allocateDirect(8).order(ByteOrder.BIG_ENDIAN);
        assertFalse(posted(new float[2]).fillable(), "an array");
        assertFalse(new PostedReceive(Buf.over(DataType.FLOAT32, be, 0, 2), null) {
            @Override
            protected boolean accepts(FrameHeader h) {
                return true;
            }
        }.fillable(), "big-endian memory");
        assertFalse(new PostedReceive(Buf.over(DataType.FLOAT32, le, 0, 2), io.jccl.ReduceOp.SUM) {
            @Override
            protected boolean accepts(FrameHeader h) {
                return true;
            }
        }.fillable(), "a reduction");
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
