package io.jccl.transport.shm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ShmSegmentCleanupTest {

    private static void segment(Path f, long pid) throws Exception {
        ByteBuffer b = ByteBuffer.allocate(ShmSegmentDescriptor.HEADER_LENGTH).order(ByteOrder.nativeOrder());
        b.putInt(ShmSegmentDescriptor.MAGIC_OFFSET, ShmSegmentDescriptor.MAGIC);
        b.putLong(ShmSegmentDescriptor.OWNER_PID_OFFSET, pid);
        Files.write(f, b.array());
    }

    @Test
    void shouldRemoveSegmentsOfDeadJobsAndKeepLiveOnes(@TempDir Path dir) throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        Path dead = dir.resolve("jccl-dead-0.shm");
        Path live = dir.resolve("jccl-live-0.shm");
        Path creating = dir.resolve("jccl-new-0.shm");
        Path other = dir.resolve("unrelated.shm");
        segment(dead, gone.pid());
        segment(live, ProcessHandle.current().pid());
        segment(creating, 0);
        segment(other, gone.pid());
        ShmTransport.removeStaleSegments(dir);
        assertFalse(Files.exists(dead), "a crashed job's segment must not outlive the next start");
        assertTrue(Files.exists(live));
        assertTrue(Files.exists(creating), "a segment whose owner is still writing its header is kept");
        assertTrue(Files.exists(other));
    }

    /**
     * The co-location probes of a rank killed during its rendezvous (Rendezvous and Spark's) were left in /dev/shm
     * for good: the next job removes those more than an hour old, and keeps a rendezvous's probes in use.
     */
    @Test
    void shouldRemoveProbesOfRendezvousThatEndedLongAgo(@TempDir Path dir) throws Exception {
        Path old = Files.writeString(dir.resolve("jccl-probe-1a2b-3"), "token");
        Path oldSpark = Files.writeString(dir.resolve("jccl-spark-probe-c0ffee-1"), "token");
        Path fresh = Files.writeString(dir.resolve("jccl-probe-4c5d-0"), "token");
        java.nio.file.attribute.FileTime twoHoursAgo = java.nio.file.attribute.FileTime.fromMillis(
                System.currentTimeMillis() - 7_200_000L);
        Files.setLastModifiedTime(old, twoHoursAgo);
        Files.setLastModifiedTime(oldSpark, twoHoursAgo);
        ShmTransport.removeStaleSegments(dir);
        assertFalse(Files.exists(old));
        assertFalse(Files.exists(oldSpark));
        assertTrue(Files.exists(fresh), "a probe of a rendezvous in progress is kept");
    }
}
