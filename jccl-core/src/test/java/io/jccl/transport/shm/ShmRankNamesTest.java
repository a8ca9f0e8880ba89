package io.jccl.transport.shm;

import io.jccl.DataType;
import io.jccl.JcclException;
import io.jccl.buffer.Buf;
import io.jccl.store.InMemoryStore;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Where the shm transport joins one host's ranks of a larger job (shm+tcp across hosts), every message of it names
 * the ranks as the job knows them, not as the host's group numbers them: world rank 5, local rank 1 of the host of
 * world ranks 4 and 5, said "rank 1: the shared-memory transport is closed" (world rank 1 is on another host). Only
 * a dead peer's message was named so ({@code PeerWatchTest.aDeadPeerShouldBeNamedByItsRankInTheJob}).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmRankNamesTest {
    private static final int[] HOST = {4, 5};

    /** The two ranks of {@code HOST}, with rings of {@code ringBytes[r]} each; named by {@code nameRanks} if asked. */
    private static CompletableFuture<ShmTransport>[] connect(Path dir, int[] ringBytes, boolean atConnect) {
        InMemoryStore store = new InMemoryStore();
        @SuppressWarnings({"unchecked", "rawtypes"})
        CompletableFuture<ShmTransport>[] f = new CompletableFuture[2];
        for (int r = 0; r < 2; r++) {
            int rank = r;
            f[r] = CompletableFuture.supplyAsync(() -> ShmTransport.connect(rank, 2, store, dir, ringBytes[rank],
                    8192, 8192, 0, Duration.ofSeconds(20), atConnect ? HOST : null), job -> {
                        Thread t = new Thread(job);
                        t.setDaemon(true);
                        t.start();
                    });
        }
        return f;
    }

    private static void assertNamesTheJobsRank(String message, int worldRank) {
        assertTrue(message.startsWith("rank " + worldRank + ":")
                || message.contains("from rank " + worldRank + ":"), message);
        assertTrue(!message.contains("rank 0") && !message.contains("rank 1"), message);
    }

    /** Named once connected (as Spark's rendezvous does) and from the start (Rendezvous): the same messages. */
    private static void closedCorruptAndFull(Path dir, boolean atConnect) throws Exception {
        CompletableFuture<ShmTransport>[] f = connect(dir, new int[] {4096, 4096}, atConnect);
        ShmTransport t0 = f[0].join();
        ShmTransport t1 = f[1].join();
        if (!atConnect) {
            t0.nameRanks(HOST);
            t1.nameRanks(HOST);
        }
        try {
            IllegalArgumentException full = assertThrows(IllegalArgumentException.class,
                    () -> t0.arena().allocate(DataType.FLOAT32, 1 << 20));
            assertNamesTheJobsRank(full.getMessage(), 4);
            // a frame of a data type no rank knows: rank 0 finds it corrupt, naming its sender
            t1.send(0, new FrameHeader(FrameDescriptor.TYPE_DATA, 0, 99, 0xFF, 0xFF, 1, -1, 1, 1, 0, 1, 0),
                    new Buf(DataType.FLOAT32, new float[1], 0, 1));
            Frame lost = t0.receive(1, 0, System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
            String why = new String((byte[]) lost.payload(), StandardCharsets.UTF_8);
            assertTrue(why.startsWith("corrupt frame in the shared-memory ring from rank 5:"), why);
            assertEquals(1, lost.header().source()); // the hybrid transport maps the source itself
            t1.close();
            JcclException closed = assertThrows(JcclException.class, () -> t1.peekHeader(0, 0));
            assertEquals("rank 5: the shared-memory transport is closed", closed.getMessage());
        } finally {
            t0.close();
            t1.close();
        }
    }

    @Test
    void messagesShouldNameTheJobsRanksOnceNamed(@TempDir Path dir) throws Exception {
        closedCorruptAndFull(dir, false);
    }

    @Test
    void messagesShouldNameTheJobsRanksFromTheStart(@TempDir Path dir) throws Exception {
        closedCorruptAndFull(dir, true);
    }

    /** Ranks that disagree on the rings' size fail at connection, each naming itself and its peer by the job's ranks. */
    @Test
    void aFailedConnectionShouldNameTheJobsRanks(@TempDir Path dir) {
        CompletableFuture<ShmTransport>[] f = connect(dir, new int[] {4096, 8192}, true);
        for (int r = 0; r < 2; r++) {
            CompletableFuture<ShmTransport> rank = f[r];
            CompletionException e = assertThrows(CompletionException.class, rank::join);
            String message = e.getCause().getMessage();
            int self = HOST[r];
            int peer = HOST[1 - r];
            // the peer's segment found of another layout, or (the peer failed first and removed it) not found
            assertTrue(message.startsWith("rank " + self + ": ") && message.contains(" of rank " + peer)
                    && (message.contains(" is not a version ") || message.contains("cannot map")), message);
            assertTrue(!message.contains("rank 0") && !message.contains("rank 1"), "a host's rank: " + message);
        }
    }

    /**
     * A host-mate that never publishes its segment (it died after joining, or was never started) is named by its
     * rank in the job, and the segment made meanwhile is removed: the wait said only "timed out ... waiting for key
     * 'shm/segment/1'", a host-local index. Both local ranks' waits: for the job's name (local rank 0's) and for a
     * segment.
     */
    @Test
    void aHostMateThatNeverComesIsNamedByItsRankInTheJob(@TempDir Path dir) throws Exception {
        JcclException e = assertThrows(JcclException.class, () -> ShmTransport.connect(0, 2, new InMemoryStore(), dir,
                4096, 8192, 8192, 0, Duration.ofMillis(300), HOST));
        assertEquals("rank 4: rank 5, on this host, did not publish its shared-memory segment within 300 ms (it "
                + "stopped, failed before, or was never started)", e.getMessage());
        assertTrue(e.getCause() instanceof io.jccl.store.StoreException, "the store's timeout is kept as the cause");
        e = assertThrows(JcclException.class, () -> ShmTransport.connect(1, 2, new InMemoryStore(), dir, 4096, 8192,
                8192, 0, Duration.ofMillis(300), HOST));
        assertEquals("rank 5: rank 4, on this host, did not name the shared-memory job within 300 ms (it stopped, "
                + "failed before, or was never started)", e.getMessage());
        try (var files = java.nio.file.Files.list(dir)) {
            assertEquals(java.util.List.of(), files.toList(), "segments left behind");
        }
    }
}
