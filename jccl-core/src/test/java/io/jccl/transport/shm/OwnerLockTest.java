package io.jccl.transport.shm;

import io.jccl.TransportKind;
import io.jccl.transport.Transport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The owner's lock of a segment (ShmSegmentDescriptor v6) belongs to the owner's process, and closing any channel of
 * that process on the file drops it. Ranks that share a JVM (a Spark executor's task slots, two communicators of one
 * program, these tests) mapped each other's segments through channels they then closed, and the clean-up of stale
 * segments opened every segment, its own JVM's too: their locks were gone, and a peer in another process took them
 * for dead and deleted their segments. Another process must find every lock held.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class OwnerLockTest {

    /** Whether a process other than this one finds the owner's lock of {@code file} held (fcntl, as Java's). */
    private static boolean heldForAnotherProcess(Path file) throws Exception {
        Process p = new ProcessBuilder("python3", "-c", "import fcntl, os, sys\n"
                + "fd = os.open(sys.argv[1], os.O_RDWR)\n"
                + "try:\n    fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0)\n    print('free')\n"
                + "except OSError:\n    print('held')\n", file.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        return out.equals("held");
    }

    /**
     * A rank whose segment's name is that of a live rank's segment of another process (a rank connected twice): the
     * other process holds the owner's lock. The rank waited for the lock, forever, under the lock every rank of its
     * process takes to open a segment, having first emptied the live rank's file (and would have deleted it on
     * failing); it now fails at once saying why, and leaves the file as it was.
     */
    @Test
    void aSegmentLockedByALiveProcessFailsItsRankAtOnceAndIsLeftAlone(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        io.jccl.store.InMemoryStore store = new io.jccl.store.InMemoryStore();
        store.setString("shm/job", "5eed");
        Path file = dir.resolve("jccl-5eed-1.shm"); // rank 1's segment: rank 0 never comes
        Process owner = new ProcessBuilder("python3", "-c", "import fcntl, os, sys\n"
                + "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
                + "os.write(fd, b'a live segment')\n"
                + "fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)\n"
                + "print('locked', flush=True)\n"
                + "sys.stdin.read()\n", file.toString()).redirectErrorStream(true).start();
        java.util.concurrent.CompletableFuture<Throwable> failed = new java.util.concurrent.CompletableFuture<>();
        try {
            String line = new java.io.BufferedReader(new java.io.InputStreamReader(owner.getInputStream())).readLine();
            assertEquals("locked", line);
            byte[] before = java.nio.file.Files.readAllBytes(file);
            Thread connecting = new Thread(() -> {
                try {
                    ShmTransport.connect(1, 2, store, dir, 4096, 8192, 8192, java.time.Duration.ofSeconds(2)).close();
                    failed.complete(null);
                } catch (Throwable e) {
                    failed.complete(e);
                }
            }, "test-rank-1");
            connecting.setDaemon(true);
            connecting.start();
            Throwable e = failed.get(20, TimeUnit.SECONDS); // the code before waited for the lock until the owner ended
            assertTrue(e instanceof io.jccl.JcclException && e.getMessage().contains("rank 1: the shared-memory "
                    + "segment " + file + " belongs to a live rank of another process"), String.valueOf(e));
            assertArrayEquals(before, java.nio.file.Files.readAllBytes(file), "the live rank's segment");
            assertTrue(heldForAnotherProcess(file));
        } finally {
            owner.destroyForcibly().waitFor(); // ends a wait for its lock too
        }
    }

    /**
     * The same within one process (two communicators given the same rank): the second rank's lock overlapped the
     * first's, so it warned and went on without one, closing its channel, which dropped the first rank's lock.
     */
    @Test
    void aSegmentARankOfThisProcessOwnsFailsTheOtherAndKeepsItsLock(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        Path file = dir.resolve("jccl-5eed-0.shm");
        java.nio.channels.FileChannel first = ShmSegment.lockOwner(0, file);
        try {
            ShmSegment.create(0, file, 4096, first);
            io.jccl.JcclException e = assertThrows(io.jccl.JcclException.class, () -> ShmSegment.lockOwner(0, file));
            assertTrue(e.getMessage().contains("rank 0: the shared-memory segment " + file
                    + " belongs to a live rank of this process"), e.getMessage());
            assertTrue(heldForAnotherProcess(file), "the first rank's lock was dropped");
            assertEquals(4096, java.nio.file.Files.size(file));
        } finally {
            ShmSegment.releaseOwner(file, first);
        }
    }

    @Test
    void ranksOfOneProcessKeepTheirLocksWhateverThisProcessOpens() throws Exception {
        List<Transport> ranks = TransportKind.SHM.connect(3); // each maps the others' segments
        try {
            ShmTransport.removeStaleSegments(ShmTransport.defaultDirectory()); // opens every segment it may
            for (Transport t : ranks) {
                Path file = ((ShmTransport) t).segmentFile().toPath();
                assertTrue(heldForAnotherProcess(file), "the lock of " + file + " was dropped");
            }
        } finally {
            for (Transport t : ranks) {
                t.close();
            }
        }
    }

    /**
     * A rank of this process locking its new segment while another thread of it cleans up stale segments (two task
     * slots of one Spark executor, one connecting while the other starts): the clean-up looked ("not ours"), the
     * rank locked, the clean-up closed its channel on the file, and the lock was gone.
     */
    @Test
    void aCleanUpRunningWhileARankLocksItsSegmentLeavesTheLockHeld(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        Thread cleaner = new Thread(() -> {
            while (!done.get()) {
                ShmSegment.removeStale(dir);
            }
        }, "clean-up");
        cleaner.start();
        try {
            for (int i = 0; i < 40; i++) {
                Path file = dir.resolve("jccl-0000000" + i + "-0.shm");
                java.nio.channels.FileChannel ch = ShmSegment.lockOwner(0, file);
                ShmSegment.create(0, file, 4096, ch);
                try {
                    Thread.sleep(2); // the clean-up's channel, if it was open, is closed by now
                    assertTrue(heldForAnotherProcess(file), "round " + i + ": the lock of " + file + " was dropped");
                } finally {
                    ShmSegment.releaseOwner(file, ch);
                    java.nio.file.Files.deleteIfExists(file);
                }
            }
        } finally {
            done.set(true);
            cleaner.join(10_000);
        }
    }
}
