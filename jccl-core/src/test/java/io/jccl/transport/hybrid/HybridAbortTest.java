package io.jccl.transport.hybrid;

import io.jccl.DataType;
import io.jccl.buffer.Buf;
import io.jccl.store.InMemoryStore;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.PeerLostException;
import io.jccl.transport.Transport;
import io.jccl.transport.local.QueueMesh;
import io.jccl.transport.shm.ShmTransport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A hybrid transport's waits on a local peer end on an abort from another host. */
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class HybridAbortTest {

    private static FrameHeader header(byte type, int source, int count) {
        return new FrameHeader(type, 0, DataType.FLOAT32.id(), 0xFF, 0xFF, source, -1, 1, count, 0, count, 0);
    }

    /**
     * World ranks 0 and 1 share a host (shared memory, 4 KiB rings), rank 2 is on another (here an in-process mesh
     * stands for TCP). Rank 0 sends rank 1 more than its ring holds while rank 1 reads nothing; rank 2 fails. The
     * send, waiting for room in the ring, saw only the shared-memory side's aborts: it waited for the call's deadline
     * (60 s here) although rank 2's abort had reached rank 0 over the other transport. It now ends at once naming
     * rank 2.
     */
    @Test
    void aSendWaitingForRoomInALocalRingEndsOnAnAbortFromAnotherHost(@TempDir Path dir) throws Exception {
        InMemoryStore store = new InMemoryStore();
        @SuppressWarnings({"unchecked", "rawtypes"})
        CompletableFuture<ShmTransport>[] shm = new CompletableFuture[2];
        for (int r = 0; r < 2; r++) { // a thread each: the two connects wait for each other (the common pool may
            int rank = r;                // have one thread on two cores)
            shm[r] = new CompletableFuture<>();
            Thread t = new Thread(() -> {
                try {
                    shm[rank].complete(ShmTransport.connect(rank, 2, store, dir, 4096, 8192, 8192,
                            Duration.ofSeconds(20)));
                } catch (Throwable e) {
                    shm[rank].completeExceptionally(e);
                }
            });
            t.setDaemon(true);
            t.start();
        }
        QueueMesh mesh = QueueMesh.create(3);
        int[] hosts = {0, 0, 1};
        Transport h0 = new HybridTransport(0, 3, new int[] {0, 1}, shm[0].join(), mesh.endpoint(0), hosts);
        Transport h1 = new HybridTransport(1, 3, new int[] {0, 1}, shm[1].join(), mesh.endpoint(1), hosts);
        Transport far = mesh.endpoint(2);
        try {
            int n = 10_000; // 40 KB through a 4 KiB ring that rank 1 does not drain
            AtomicReference<Throwable> sending = new AtomicReference<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            Thread sender = new Thread(() -> {
                try {
                    h0.send(1, header(FrameDescriptor.TYPE_DATA, 0, n), new Buf(DataType.FLOAT32, new float[n], 0, n),
                            deadline);
                } catch (Throwable e) {
                    sending.set(e);
                }
            });
            sender.start();
            Thread.sleep(300);
            assertTrue(sender.isAlive(), "the send waits for room while rank 1 reads nothing: " + sending.get());
            long start = System.nanoTime();
            far.abortPeers(new int[] {0, 1}, header(FrameDescriptor.TYPE_ABORT, 2, 0), "rank 2 failed on its host");
            sender.join(30_000);
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertFalse(sender.isAlive(), "the send still waits, " + ms + " ms after rank 2's abort");
            PeerLostException e = assertInstanceOf(PeerLostException.class, sending.get());
            assertEquals(2, e.peer(), e.getMessage());
            assertEquals("rank 2 failed on its host", e.getMessage());
            assertTrue(ms < 10_000, "the send ended " + ms + " ms after the abort"); // a bound, not a speed
        } finally {
            h1.close();
            h0.close();
            far.close();
        }
    }
}
