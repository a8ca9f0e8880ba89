package io.jccl.transport.shm;

import io.jccl.DataType;
import io.jccl.JcclException;
import io.jccl.buffer.Buf;
import io.jccl.store.InMemoryStore;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.SharedArena;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The waits of the shared-memory transport end on an interrupt of their thread: a park returns at once while the
 * thread's interrupt status is set, and a receive, a send waiting for room in a ring or a wait in the arena spun a
 * core until its deadline (here 5 s; in a call, its timeout, 30 minutes by default).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmInterruptTest {
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(5);

    private static ShmTransport[] connect(Path dir) {
        InMemoryStore store = new InMemoryStore();
        @SuppressWarnings({"unchecked", "rawtypes"})
        CompletableFuture<ShmTransport>[] f = new CompletableFuture[2];
        for (int r = 0; r < 2; r++) {
            int rank = r;
            f[r] = CompletableFuture.supplyAsync(() -> ShmTransport.connect(rank, 2, store, dir, 4096, 8192, 8192,
                    Duration.ofSeconds(20)), job -> {
                        Thread t = new Thread(job);
                        t.setDaemon(true);
                        t.start();
                    });
        }
        return new ShmTransport[] {f[0].join(), f[1].join()};
    }

    private interface Wait {
        void run() throws Exception;
    }

    /**
     * Runs {@code wait} on a thread interrupted after 200 ms: what it threw (null if nothing), after checking that it
     * ended well before the 5 s it may wait and that the thread's interrupt status stayed set.
     */
    private static Throwable interrupted(Wait wait) throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicBoolean stillInterrupted = new AtomicBoolean();
        long[] took = new long[1];
        Thread waiter = new Thread(() -> {
            long start = System.nanoTime();
            try {
                wait.run();
            } catch (Throwable e) {
                thrown.set(e);
            } finally {
                took[0] = System.nanoTime() - start;
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            }
        }, "waiter");
        waiter.start();
        Thread.sleep(200);
        waiter.interrupt();
        waiter.join(10_000);
        assertFalse(waiter.isAlive());
        assertTrue(took[0] < WAIT_NANOS / 2, "ended " + took[0] / 1_000_000 + " ms after it began");
        assertTrue(stillInterrupted.get() || thrown.get() instanceof InterruptedException,
                "the interrupt was lost: " + thrown.get());
        return thrown.get();
    }

    private static FrameHeader header(int count) {
        return new FrameHeader(FrameDescriptor.TYPE_DATA, 0, DataType.FLOAT32.id(), 0xFF, 0xFF, 0, -1, 1, count, 0,
                count, 0);
    }

    @Test
    void aReceiveShouldEndOnAnInterrupt(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir);
        try {
            Throwable e = interrupted(() -> t[0].receive(1, 0, System.nanoTime() + WAIT_NANOS));
            assertInstanceOf(InterruptedException.class, e);
        } finally {
            t[0].close();
            t[1].close();
        }
    }

    /** 40 KB into a 4 KiB ring that rank 1 does not read: the send waits for room, with a deadline or without. */
    @Test
    void aSendWaitingForRoomShouldEndOnAnInterrupt(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir);
        try {
            int n = 10_000;
            Throwable e = interrupted(() -> t[0].send(1, header(n), new Buf(DataType.FLOAT32, new float[n], 0, n),
                    System.nanoTime() + WAIT_NANOS));
            assertInstanceOf(JcclException.class, e);
            assertTrue(e.getMessage().contains("rank 0: interrupted while sending to rank 1 (waiting for room in its "
                    + "ring)"), e.getMessage());
            e = interrupted(() -> t[0].send(1, header(n), new Buf(DataType.FLOAT32, new float[n], 0, n)));
            assertInstanceOf(JcclException.class, e);
            assertTrue(e.getMessage().contains("interrupted while sending to rank 1"), e.getMessage());
        } finally {
            t[0].close();
            t[1].close();
        }
    }

    /** The arena's wait returns early, as at the deadline, and leaves the status for its caller to see. */
    @Test
    void aWaitInTheArenaShouldReturnOnAnInterrupt(@TempDir Path dir) throws Exception {
        ShmTransport[] t = connect(dir);
        SharedArena arena = t[0].arena();
        try {
            int[] behind = {-2};
            Throwable e = interrupted(() -> {
                arena.enter();
                try {
                    behind[0] = arena.await(SharedArena.ARRIVED, 1, System.nanoTime() + WAIT_NANOS);
                } finally {
                    arena.exit();
                }
            });
            assertTrue(e == null, String.valueOf(e));
            assertTrue(behind[0] >= 0, "returned " + behind[0]); // a rank not there yet
        } finally {
            t[0].close();
            t[1].close();
        }
    }
}
