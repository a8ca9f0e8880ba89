package io.jccl.transport.hybrid;

import io.jccl.DataType;
import io.jccl.buffer.Buf;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Transport;
import io.jccl.transport.local.QueueMesh;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

/**
 * A received frame's array goes back to the pool of the transport that read it. The hybrid transport used to drop
 * every release, so a TCP reader, which takes an array from its pool for each frame that arrives before its receive
 * is posted, allocated one per frame: 1 MiB arrays in the rings between hosts, humongous to G1, which ran a
 * concurrent cycle every few calls of a 64 MiB allreduce on the test bed (docs/performance.md, session 35).
 */
class HybridReleaseTest {

    /** Delegates everything; records what is released. */
    private static final class Recording implements Transport {
        final Transport inner;
        final List<Frame> released = new ArrayList<>();

        Recording(Transport inner) {
            this.inner = inner;
        }

        @Override public int rank() { return inner.rank(); }
        @Override public int size() { return inner.size(); }
        @Override public String name() { return inner.name(); }
        @Override public void send(int dst, FrameHeader h, Buf payload) { inner.send(dst, h, payload); }
        @Override public Frame receive(int src, int stream, long deadline) throws InterruptedException {
            return inner.receive(src, stream, deadline);
        }
        @Override public FrameHeader peekHeader(int src, int stream) { return inner.peekHeader(src, stream); }
        @Override public void release(Frame frame) { released.add(frame); }
        @Override public Frame pendingAbort(int src, int stream) { return inner.pendingAbort(src, stream); }
        @Override public void abortPeers(int[] peers, FrameHeader h, String reason) { inner.abortPeers(peers, h, reason); }
        @Override public void interrupt(Frame abort) { inner.interrupt(abort); }
        @Override public void close() { inner.close(); }
    }

    private static Frame frameFrom(int source, int n) {
        FrameHeader h = new FrameHeader(FrameDescriptor.TYPE_DATA, 0, DataType.FLOAT32.id(), 0xFF, 0xFF, source, -1, 1,
                n, 0, n, 0);
        return new Frame(h, new float[n]);
    }

    @Test
    void aFrameGoesBackToTheTransportThatReadIt() {
        QueueMesh hostMesh = QueueMesh.create(2);
        QueueMesh worldMesh = QueueMesh.create(3);
        Recording local = new Recording(hostMesh.endpoint(0));
        Recording remote = new Recording(worldMesh.endpoint(0));
        Transport h0 = new HybridTransport(0, 3, new int[] {0, 1}, local, remote, new int[] {0, 0, 1});
        try {
            Frame fromOtherHost = frameFrom(2, 1 << 18);
            Frame fromThisHost = frameFrom(1, 1 << 18);
            h0.release(fromOtherHost);
            h0.release(fromThisHost);
            assertEquals(1, remote.released.size(), "the frame of rank 2 (another host, over TCP)");
            assertSame(fromOtherHost.payload(), remote.released.get(0).payload());
            assertEquals(1, local.released.size(), "the frame of rank 1 (this host, shared memory)");
            assertSame(fromThisHost.payload(), local.released.get(0).payload());
        } finally {
            h0.close();
            hostMesh.endpoint(1).close();
            worldMesh.endpoint(1).close();
            worldMesh.endpoint(2).close();
        }
    }
}
