package io.jccl.transport;

import io.jccl.DataType;
import io.jccl.OpType;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The order in which an {@link Inbox} hands out a peer's last frames and the news that the peer left. */
class InboxTest {
    private static final int STREAM = Streams.collective(0);

    private static Frame data() {
        return new Frame(new FrameHeader(FrameDescriptor.TYPE_DATA, OpType.REDUCE_SCATTER.id(), DataType.FLOAT32.id(),
                0xFF, 0xFF, 1, -1, 1, 1, 0, 1, STREAM), new float[] {42f});
    }

    /**
     * A peer sends its last frame and closes while this rank looks at its queue: the frame comes before the goodbye,
     * however the two threads interleave (the race that failed a correct hierarchical reduce-scatter in CI: rank 1
     * was told "rank 4 closed its communicator" while rank 4's last frame sat in its queue). Many short races, each
     * on a new inbox, so that the window between the look at the queue and the look at the aborts is hit.
     */
    @Test
    void aPeersLastFrameComesBeforeItsGoodbye() throws Exception {
        for (int trial = 0; trial < 5_000; trial++) {
            Inbox inbox = new Inbox(2);
            Frame last = data();
            inbox.poll(1, STREAM); // the lane exists, as it does for a rank that waited on it before
            CountDownLatch go = new CountDownLatch(1);
            Thread peer = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                inbox.deliver(1, last);
                inbox.peerClosed(1, Frame.departed(1));
            });
            peer.start();
            go.countDown();
            Frame first;
            do {
                first = inbox.poll(1, STREAM);
            } while (first == null);
            peer.join();
            assertSame(last, first, "trial " + trial + ": the goodbye overtook the last frame");
            Frame then = inbox.receive(1, STREAM, System.nanoTime() + TimeUnit.SECONDS.toNanos(1));
            assertTrue(then.isDeparture(), "trial " + trial + ": after the last frame, the goodbye");
            assertFalse(then.header().isAbort() && then == last);
        }
    }
}
