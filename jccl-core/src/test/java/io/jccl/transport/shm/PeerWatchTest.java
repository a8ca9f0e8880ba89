package io.jccl.transport.shm;

import io.jccl.transport.Frame;
import io.jccl.transport.Inbox;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PeerWatchTest {

    @Test
    void theStateShouldFollowTheLastParenthesisOfTheCommand() {
        assertEquals('S', PeerWatch.state("42 (sleep) S 1 42 42 0 -1"));
        assertEquals('Z', PeerWatch.state("42 (a) R (b) Z 1 42 42 0 -1"), "a comm of 'a) R (b'");
        assertEquals('R', PeerWatch.state("42 (java main) R 1"));
        assertEquals(0, PeerWatch.state("garbage"));
        assertEquals(0, PeerWatch.state("42 (x)"));
    }

    @Test
    void theCurrentProcessShouldBeAliveAndAReapedOneDead() throws Exception {
        assertTrue(PeerWatch.isAlive(ProcessHandle.current().pid()));
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        assertFalse(PeerWatch.isAlive(gone.pid()));
        assertFalse(PeerWatch.isAlive(-1));
    }

    /** The pid of the first child of {@code parent} found in /proc, or -1. */
    private static long childOf(long parent) throws IOException {
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path p : procs) {
                String stat;
                try {
                    stat = new String(Files.readAllBytes(p.resolve("stat")), StandardCharsets.ISO_8859_1);
                } catch (IOException e) {
                    continue; // exited meanwhile
                }
                String[] rest = stat.substring(stat.lastIndexOf(')') + 1).trim().split(" ");
                if (rest.length > 1 && Long.parseLong(rest[1]) == parent) {
                    return Long.parseLong(p.getFileName().toString());
                }
            }
        }
        return -1;
    }

    private static char stateOf(long pid) throws IOException {
        return PeerWatch.state(new String(Files.readAllBytes(Path.of("/proc/" + pid + "/stat")),
                StandardCharsets.ISO_8859_1));
    }

    /** A zombie: {@code sleep 0.2} exits and its parent, the shell exec'ed into {@code sleep 30}, never reaps it. */
    private static long[] zombie(Process parent) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() - deadline < 0) {
            long child = childOf(parent.pid());
            if (child > 0 && stateOf(child) == 'Z') {
                return new long[] {parent.pid(), child};
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no zombie appeared under pid " + parent.pid());
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void aZombieShouldCountAsDead(@TempDir Path dir) throws Exception {
        Process parent = new ProcessBuilder("sh", "-c", "sleep 0.2 & exec sleep 30").start();
        try {
            long[] pids = zombie(parent);
            // ProcessHandle says alive for a zombie (kill(pid, 0) succeeds): what let a killed rank go unnoticed
            assertFalse(PeerWatch.isAlive(pids[1]), "zombie " + pids[1]);
            assertTrue(PeerWatch.isAlive(pids[0]), "its parent " + pids[0]);

            // a rank whose peer is that zombie reports it and removes its segment
            Inbox inbox = new Inbox(3);
            PeerWatch watch = new PeerWatch(0, 3, inbox);
            Path segment = Files.createFile(dir.resolve("jccl-z-2.shm"));
            watch.watch(1, pids[0], dir.resolve("jccl-z-1.shm"));
            watch.watch(2, pids[1], segment);
            Thread.sleep(PeerWatch.CHECK_NANOS / 1_000_000 + 10);
            assertEquals(2, watch.check(2, "waiting for"));
            assertFalse(Files.exists(segment));
            Frame lost = inbox.pendingAbort(2, 0);
            String reason = new String((byte[]) lost.payload(), StandardCharsets.UTF_8);
            assertEquals("rank 2 (pid " + pids[1] + ") died: its process is gone (noticed while waiting for rank 2)",
                    reason);
        } finally {
            parent.destroyForcibly().waitFor(); // the zombie goes to init, which reaps it
        }
    }

    /**
     * Where the shm transport joins one host's ranks of a larger job, its messages name a dead peer as the job
     * knows it: local rank 0 of the host holding world ranks 2 and 3 is rank 2 (a message said "rank 0 (pid ...)
     * died" on the multi-host bed), while the frame's source stays the local rank, which the hybrid transport maps.
     */
    @Test
    void aDeadPeerShouldBeNamedByItsRankInTheJob(@TempDir Path dir) throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        Inbox inbox = new Inbox(2);
        PeerWatch watch = new PeerWatch(1, 2, inbox);
        watch.names(new int[] {2, 3});
        watch.watch(0, gone.pid(), dir.resolve("jccl-w-0.shm"));
        Thread.sleep(PeerWatch.CHECK_NANOS / 1_000_000 + 10);
        assertEquals(0, watch.check(0, "waiting for"));
        Frame lost = inbox.pendingAbort(0, 0);
        assertEquals(0, lost.header().source());
        assertEquals("rank 2 (pid " + gone.pid() + ") died: its process is gone (noticed while waiting for rank 2)",
                new String((byte[]) lost.payload(), StandardCharsets.UTF_8));
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void theSegmentOfAZombieShouldBeRemovedAsStale(@TempDir Path dir) throws Exception {
        Process parent = new ProcessBuilder("sh", "-c", "sleep 0.2 & exec sleep 30").start();
        try {
            long[] pids = zombie(parent);
            Path ofZombie = dir.resolve("jccl-zombie-0.shm");
            Path ofParent = dir.resolve("jccl-parent-0.shm");
            for (Path f : new Path[] {ofZombie, ofParent}) {
                ByteBuffer b = ByteBuffer.allocate(ShmSegmentDescriptor.HEADER_LENGTH).order(ByteOrder.nativeOrder());
                b.putInt(ShmSegmentDescriptor.MAGIC_OFFSET, ShmSegmentDescriptor.MAGIC);
                b.putLong(ShmSegmentDescriptor.OWNER_PID_OFFSET, f == ofZombie ? pids[1] : pids[0]);
                Files.write(f, b.array());
            }
            ShmTransport.removeStaleSegments(dir);
            assertFalse(Files.exists(ofZombie));
            assertTrue(Files.exists(ofParent));
        } finally {
            parent.destroyForcibly().waitFor();
        }
    }

    /** {@code store} as a rank sees it that reads {@code pid} as rank {@code peer}'s. */
    private static io.jccl.store.Store withPid(io.jccl.store.Store store, int peer, long pid) {
        return new io.jccl.store.Store() {
            @Override public void set(String key, byte[] value) { store.set(key, value); }
            @Override public byte[] get(String key, java.time.Duration timeout) {
                return key.equals("shm/pid/" + peer) ? Long.toString(pid).getBytes(StandardCharsets.UTF_8)
                        : store.get(key, timeout);
            }
            @Override public long add(String key, long delta) { return store.add(key, delta); }
            @Override public boolean check(String key) { return store.check(key); }
            @Override public boolean delete(String key) { return store.delete(key); }
            @Override public void close() { }
        };
    }

    /**
     * A peer that closed cleanly and exited while another thread of this rank held the drain (an asynchronous
     * receive's pool thread draining the rings while the collective thread waits): this thread's drain gave up on
     * the lock, its look at the peers found the process gone, and it declared the peer dead, which failed every
     * communicator of the transport, blaming a rank that left cleanly, whose goodbye waited in its ring.
     */
    @Test
    void aPeerWhoseGoodbyeWaitsInItsRingShouldNotBeDeclaredDead(@TempDir Path dir) throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        io.jccl.store.InMemoryStore store = new io.jccl.store.InMemoryStore();
        // rank 0 sees rank 1 as another process's rank, which exits once rank 1 has closed: the pid of one gone
        java.util.concurrent.CompletableFuture<ShmTransport> r0 = java.util.concurrent.CompletableFuture.supplyAsync(
                () -> ShmTransport.connect(0, 2, withPid(store, 1, gone.pid()), dir, 4096, 8192, 8192,
                        java.time.Duration.ofSeconds(20)));
        ShmTransport t1 = ShmTransport.connect(1, 2, store, dir, 4096, 8192, 8192, java.time.Duration.ofSeconds(20));
        ShmTransport t0 = r0.join();
        java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
        Thread drainer = new Thread(() -> {
            t0.drainLock().lock();
            try {
                held.countDown();
                Thread.sleep(1_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                t0.drainLock().unlock();
            }
        }, "drainer");
        drainer.start();
        try {
            held.await();
            t1.close(); // its goodbye goes into rank 0's ring; its segment is no longer owned in this JVM
            Frame f = t0.receive(1, 0, System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
            String why = new String((byte[]) f.payload(), StandardCharsets.UTF_8);
            assertTrue(f.isDeparture(), why);
            Frame another = t0.pendingAbort(1, 12345); // another communicator's stream: no lost peer either
            assertTrue(another.isDeparture(), new String((byte[]) another.payload(), StandardCharsets.UTF_8));
        } finally {
            drainer.join(10_000);
            t0.close();
        }
    }
}
