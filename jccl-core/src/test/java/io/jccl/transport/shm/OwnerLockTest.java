package io.jccl.transport.shm;

import io.jccl.TransportKind;
import io.jccl.transport.Transport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
                ShmSegment.create(0, file, 4096);
                java.nio.channels.FileChannel ch = ShmSegment.lockOwner(0, file);
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
