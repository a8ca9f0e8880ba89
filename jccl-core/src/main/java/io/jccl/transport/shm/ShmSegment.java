package io.jccl.transport.shm;

import io.jccl.JcclException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static io.jccl.transport.shm.ShmSegmentDescriptor.*;

/**
 * The life of segment files (see {@link ShmSegmentDescriptor}): creating and mapping a rank's own, mapping and
 * validating a peer's, deleting, and removing those of jobs that are gone. Files are mapped with
 * {@link FileChannel#map} and never unmapped explicitly: a mapping is released by the garbage collector once no
 * buffer refers to it, so no thread can ever touch memory that was unmapped under it.
 */
final class ShmSegment {
    private static final Logger LOG = LoggerFactory.getLogger(ShmSegment.class);
    private static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

    private ShmSegment() {
    }

    /**
     * Makes {@code file} a segment of {@code length} bytes (sparse, zero) and maps it, in native byte order, through
     * {@code owner}, the channel that holds its owner's lock ({@link #lockOwner}), or where that is null (a file
     * system without locks) through a channel of its own. On failure deletes the file and drops the lock.
     */
    static MappedByteBuffer create(int rank, Path file, long length, FileChannel owner) {
        try {
            MappedByteBuffer m;
            if (owner != null) { // never a channel of its own: closing it would drop the lock
                owner.truncate(0);
                m = owner.map(FileChannel.MapMode.READ_WRITE, 0, length); // grows the file to length
            } else {
                try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE,
                        StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    m = ch.map(FileChannel.MapMode.READ_WRITE, 0, length);
                }
            }
            m.order(ByteOrder.nativeOrder());
            return m;
        } catch (IOException | RuntimeException e) {
            delete(file);
            releaseOwner(file, owner);
            throw new JcclException("rank " + rank + ": cannot create the shared-memory segment " + file + " ("
                    + length + " bytes): " + e.getMessage(), e);
        }
    }

    /** A co-location probe older than this is left over from a rank killed during its rendezvous. */
    static final long PROBE_MAX_AGE_MILLIS = 3_600_000L;

    /**
     * The segments ranks of this process own, each with the channel that holds its owner's lock. A POSIX lock belongs
     * to the process, and closing any channel of this process on the file drops it: so nothing in this process opens
     * and closes a channel on a segment it owns (a peer rank of this JVM maps it through this channel, the clean-up
     * of stale segments skips it, a watch of it asks this map). Two executors' task slots on one host (Spark), a test
     * JVM's ranks, or two communicators of one rank all own segments side by side.
     */
    private static final java.util.Map<Path, FileChannel> OWNED = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Held from a look at {@link #OWNED} to the close of the channel opened after it (the clean-up, mapping a
     * peer), and while a rank takes its lock: otherwise a rank of this process could lock its segment between the
     * look ("not ours") and the close, which would drop that lock (two task slots of one Spark executor, one
     * connecting while the other cleans up).
     */
    private static final Object CHANNELS = new Object();

    private static Path key(Path file) {
        return file.toAbsolutePath().normalize();
    }

    /**
     * Takes the owner's lock of {@code file}, creating the file if need be, before {@link #create} writes it (an
     * exclusive lock of its byte 0, held by the returned channel until {@link #releaseOwner};
     * {@link ShmSegmentDescriptor}): peers in other processes tell from it whether the owner's process lives, which
     * pids cannot do across pid namespaces (containers sharing {@code /dev/shm} with {@code --ipc=host}: a pid means
     * another process there, or none). The kernel drops it when the process ends, however it ends. Where the file
     * system takes no locks this warns and returns null: the peers then judge by pid.
     *
     * @throws JcclException naming the rank and the file, the file left as it is, if a live rank owns it: a rank of
     *                       this process, or one of another process, which holds the lock (never waited for: it is
     *                       held until that rank closes)
     */
    static FileChannel lockOwner(int rank, Path file) {
        FileChannel ch = null;
        try {
            synchronized (CHANNELS) {
                if (ownedHere(file)) { // opening a channel on it and closing it would drop that rank's lock
                    throw ownedByALiveRank(rank, file, "this process");
                }
                ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                        StandardOpenOption.WRITE);
                java.nio.channels.FileLock held;
                try {
                    held = ch.tryLock(0, 1, false);
                } catch (java.nio.channels.OverlappingFileLockException e) { // this JVM holds it, by another path
                    closeQuietly(ch);
                    throw ownedByALiveRank(rank, file, "this process");
                }
                if (held == null) {
                    closeQuietly(ch);
                    throw ownedByALiveRank(rank, file, "another process (it holds the segment's owner's lock)");
                }
                OWNED.put(key(file), ch);
            }
            return ch;
        } catch (JcclException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            if (ch != null) {
                try {
                    ch.close();
                } catch (IOException ignored) {
                    // without a lock anyway
                }
            }
            LOG.warn("rank {}: cannot lock its shared-memory segment {} ({}); its peers judge its liveness by its pid, "
                    + "which fails across pid namespaces", rank, file, e.toString());
            return null;
        }
    }

    private static void closeQuietly(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // it held no lock: nothing is lost
        }
    }

    private static JcclException ownedByALiveRank(int rank, Path file, String owner) {
        return new JcclException("rank " + rank + ": the shared-memory segment " + file + " belongs to a live rank of "
                + owner + ": rank " + rank + " of this job is connected twice (two processes or communicators given "
                + "the same rank, or a store that two jobs share)", null);
    }

    /** Drops the owner's lock {@link #lockOwner} took, as the segment's rank closes. */
    static void releaseOwner(Path file, FileChannel ch) {
        if (ch == null) {
            return;
        }
        OWNED.remove(key(file), ch);
        try {
            ch.close();
        } catch (IOException e) {
            LOG.debug("closing the lock of {}: {}", file, e.toString());
        }
    }

    /** Whether a rank of this process owns segment {@code file} (and so lives). */
    static boolean ownedHere(Path file) {
        return OWNED.containsKey(key(file));
    }

    /**
     * Whether the process that owns segment {@code file} holds its owner's lock ({@link #lockOwner}), read through
     * {@code ch}, a channel on it that the caller keeps open, in a process that does not own it ({@link #ownedHere}).
     * TRUE: it does; FALSE: nobody holds it (the owner is gone); null: the lock cannot tell.
     */
    static Boolean ownerHoldsLock(FileChannel ch) {
        try {
            java.nio.channels.FileLock l = ch.tryLock(0, 1, true);
            if (l == null) {
                return Boolean.TRUE;
            }
            l.release();
            return Boolean.FALSE;
        } catch (java.nio.channels.OverlappingFileLockException e) {
            return Boolean.TRUE; // held in this JVM
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Fills in the header of a rank's own segment and marks it ready (a release store, last). */
    static void writeHeader(ByteBuffer own, int rank, int size, int ringBytes, int arenaBytes, int registeredBytes,
                            long pid, long job) {
        own.putInt(MAGIC_OFFSET, MAGIC).putInt(VERSION_OFFSET, VERSION).putInt(WORLD_SIZE_OFFSET, size)
                .putInt(OWNER_RANK_OFFSET, rank).putInt(RING_CAPACITY_OFFSET, ringBytes)
                .putInt(RING_STRIDE_OFFSET, ringStride(ringBytes)).putLong(OWNER_PID_OFFSET, pid)
                .putLong(JOB_ID_OFFSET, job).putInt(ARENA_BYTES_OFFSET, arenaBytes)
                .putInt(REGISTERED_BYTES_OFFSET, registeredBytes)
                .putInt(AVAILABLE_PROCESSORS_OFFSET, Runtime.getRuntime().availableProcessors());
        long[] cpus = io.jccl.transport.HostCpus.allowed();
        for (int w = 0; w < cpus.length; w++) {
            own.putLong(ALLOWED_CPUS_OFFSET + 8 * w, cpus[w]);
        }
        INTS.setRelease(own, READY_OFFSET, 1);
    }

    /**
     * The cores the owners of {@code segments} (every rank of the transport, all on this host) may run on: see
     * {@link io.jccl.transport.HostCpus#cores}.
     */
    static int cores(ByteBuffer[] segments) {
        long[][] allowed = new long[segments.length][io.jccl.transport.HostCpus.WORDS];
        int[] available = new int[segments.length];
        for (int r = 0; r < segments.length; r++) {
            available[r] = segments[r].getInt(AVAILABLE_PROCESSORS_OFFSET);
            for (int w = 0; w < io.jccl.transport.HostCpus.WORDS; w++) {
                allowed[r][w] = segments[r].getLong(ALLOWED_CPUS_OFFSET + 8 * w);
            }
        }
        return io.jccl.transport.HostCpus.cores(allowed, available, Runtime.getRuntime().availableProcessors());
    }

    /**
     * Maps the segment {@code file} of rank {@code owner} and checks that it is a ready segment of this layout
     * version with the same geometry.
     */
    static MappedByteBuffer openPeer(int rank, int owner, Path file, int size, int ringBytes, int arenaBytes,
                                     int registeredBytes) {
        MappedByteBuffer m;
        try {
            synchronized (CHANNELS) {
                FileChannel owned = OWNED.get(key(file));
                if (owned != null) { // a rank of this process owns it: map through its channel, never close one
                    m = owned.map(FileChannel.MapMode.READ_WRITE, 0, owned.size());
                } else {
                    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                        m = ch.map(FileChannel.MapMode.READ_WRITE, 0, ch.size());
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            throw new JcclException("rank " + rank + ": cannot map the shared-memory segment " + file + " of rank "
                    + owner + ": " + e, e);
        }
        m.order(ByteOrder.nativeOrder());
        long length = segmentLength(size, ringBytes, arenaBytes, registeredBytes);
        if (m.capacity() != length || m.getInt(MAGIC_OFFSET) != MAGIC || m.getInt(VERSION_OFFSET) != VERSION
                || (int) INTS.getAcquire(m, READY_OFFSET) != 1
                || m.getInt(RING_CAPACITY_OFFSET) != ringBytes || m.getInt(WORLD_SIZE_OFFSET) != size
                || m.getInt(ARENA_BYTES_OFFSET) != arenaBytes
                || m.getInt(REGISTERED_BYTES_OFFSET) != registeredBytes) {
            throw new JcclException("rank " + rank + ": the segment " + file + " of rank " + owner
                    + " is not a version " + VERSION + " jccl segment of this job", null);
        }
        return m;
    }

    /** Deletes {@code file} if it exists; false (and logged) if it cannot. */
    static boolean delete(Path file) {
        try {
            Files.deleteIfExists(file);
            return true;
        } catch (IOException e) {
            LOG.warn("cannot remove the shared-memory segment {}: {}", file, e.toString());
            return false;
        }
    }

    /**
     * Removes segments in {@code dir} whose owner process is gone (a crashed earlier job), a zombie included (see
     * {@link PeerWatch#isAlive}).
     */
    static void removeStale(Path dir) {
        // co-location probes (Rendezvous, Spark's rendezvous) live for a rendezvous, seconds: one an hour old was
        // left by a rank killed during its rendezvous
        long hourAgo = System.currentTimeMillis() - PROBE_MAX_AGE_MILLIS;
        try (DirectoryStream<Path> probes = Files.newDirectoryStream(dir, "jccl-*probe-*")) {
            for (Path f : probes) {
                try {
                    if (Files.getLastModifiedTime(f).toMillis() < hourAgo) {
                        LOG.info("removing the co-location probe {} of a rendezvous that ended an hour ago", f);
                        Files.deleteIfExists(f);
                    }
                } catch (IOException e) {
                    LOG.debug("cannot remove the old probe {}: {}", f, e.toString());
                }
            }
        } catch (IOException e) {
            LOG.debug("cannot scan {} for old probes: {}", dir, e.toString());
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "jccl-*.shm")) {
            for (Path f : files) {
                synchronized (CHANNELS) { // nothing of this process may lock f until the channels below are closed
                    removeIfStale(f);
                }
            }
        } catch (IOException e) {
            LOG.debug("cannot scan {} for stale segments: {}", dir, e.toString());
        }
    }

    /** {@link #removeStale}'s look at one segment, under {@link #CHANNELS}. */
    private static void removeIfStale(Path f) throws IOException {
        if (ownedHere(f)) {
            return; // live, and opening it here would drop its owner's lock (OWNED)
        }
        long pid = -1;
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
            if (ch.size() >= HEADER_LENGTH) {
                ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());
                ch.read(b, OWNER_PID_OFFSET);
                pid = b.getLong(0);
            }
        } catch (IOException e) {
            return;
        }
        if (pid <= 0 && Files.getLastModifiedTime(f).toMillis() > System.currentTimeMillis() - 60_000) {
            return; // being created right now: its owner has not written its pid yet
        }
        // gone only if nobody holds its owner's lock and its pid names no process here either: a segment of a
        // live job in another pid namespace (its pid unknown here) keeps its lock; where locks cannot tell
        // (a file system without them, a segment of a version before 6), the pid decides
        Boolean locked;
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            locked = ownerHoldsLock(ch);
        } catch (IOException e) {
            return;
        }
        if (!Boolean.TRUE.equals(locked) && !PeerWatch.isAlive(pid)) {
            LOG.info("removing the shared-memory segment {} of a job that is gone (pid {})", f, pid);
            Files.deleteIfExists(f);
        }
    }
}
