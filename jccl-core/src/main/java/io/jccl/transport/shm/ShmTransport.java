package io.jccl.transport.shm;

import io.jccl.DataType;
import io.jccl.JcclException;
import io.jccl.buffer.Buf;
import io.jccl.store.Store;
import io.jccl.transport.AbstractTransport;
import io.jccl.transport.ArrayPool;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Inbox;
import io.jccl.transport.PeerLostException;
import io.jccl.transport.SetUpTimeouts;
import io.jccl.transport.SharedArena;
import io.jccl.transport.WaitStrategy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.ReentrantLock;

import static io.jccl.transport.shm.ShmSegmentDescriptor.*;

/**
 * Ranks that are processes on one host, through memory-mapped files: every rank owns a segment holding one
 * single-producer single-consumer ring ({@code ShmRing}) per source rank, laid out by {@link ShmSegmentDescriptor}.
 * A frame is written into the destination's ring in fragments of at most the ring's maximum message length,
 * straight from the source array; the owner reassembles frames into its {@link Inbox}.
 *
 * <p>No background threads: a rank makes progress (drains every ring into its inbox) whenever it waits, whether
 * to receive or for space to send, so two ranks sending to each other through full rings cannot deadlock.
 * Waiting spins only while the ranks on this host do not outnumber its cores, then yields, then parks for up to
 * 1 ms at a time, so a rank that waits long for a late peer uses little CPU; an interrupt of the waiting thread ends
 * the wait. A peer whose process has died is noticed within about 100 ms and named in the error: while waiting, a
 * rank checks the owner's lock of each peer's segment, which the kernel drops when the owner's process ends however
 * it ends (whatever pid namespace it runs in), and the peer's pid only where that lock cannot tell (a file system
 * that takes no locks; a zombie counts as dead); a peer whose goodbye is in its ring left cleanly ({@code PeerWatch}).
 * Segments are removed on close and by a shutdown hook (SIGTERM), and segments of dead jobs in the same directory are
 * removed at start.
 *
 * <p>Memory safety: segments are mapped with {@link java.nio.channels.FileChannel#map} and never unmapped
 * explicitly (the garbage collector releases a mapping once unreachable), and every access goes through a
 * {@link ByteBuffer}. A close while another thread of this rank is inside a call therefore cannot crash it: that
 * call, and every later one, fails with "the shared-memory transport is closed".
 */
public final class ShmTransport extends AbstractTransport {
    private static final Logger LOG = LoggerFactory.getLogger(ShmTransport.class);
    /** Environment variable: directory of the segments (default /dev/shm, else the temp dir). */
    public static final String DIR_ENV = "JCCL_SHM_DIR";
    /** Environment variable: bytes per ring (power of two, default 4 MiB). */
    public static final String RING_ENV = "JCCL_SHM_RING_BYTES";
    public static final int RING_DEFAULT = 4 << 20;
    /** Environment variable: bytes per exchange buffer of the shared arena (multiple of 4096, default 4 MiB). */
    public static final String ARENA_ENV = "JCCL_SHM_ARENA_BYTES";
    public static final int ARENA_DEFAULT = 4 << 20;
    /**
     * Environment variable: bytes of the registered region, where {@code Communicator.allocate} places buffers
     * that peers read in place (multiple of 4096, default 256 MiB; the file is sparse, pages cost memory only once
     * used).
     */
    public static final String REGISTERED_ENV = "JCCL_SHM_REGISTERED_BYTES";
    public static final int REGISTERED_DEFAULT = 256 << 20;

    private final Path file;
    /** By destination: this rank's ring in the destination's segment. */
    private final ShmRing[] outbound;
    private final ReentrantLock[] sendLocks;
    /** By destination: its segment, for the abort mailbox beside this rank's ring there; null for this rank. */
    private final ByteBuffer[] peerSegments;
    /** By destination: held while this rank posts into its abort mailbox there (one post at a time). */
    private final Object[] mailboxLocks;
    /** By destination: the slot of its abort mailbox this rank posts into next ({@link #mailboxLocks} held). */
    private final int[] mailboxNext;
    private final int ringBytes;
    private final PeerWatch watch;
    private final ShmDrain drain;
    /** Spins before a wait yields; set once every rank's segment (and so its CPU affinity) is known. */
    private int maxSpins;
    final int oversubscribedSpins;
    /**
     * Each receiving thread's wait, kept across the slices of one wait (see {@link #receive}), so that a rank
     * waiting long for a late peer parks instead of yielding again at every slice.
     */
    private final ThreadLocal<WaitStrategy> receiveWaits;
    /** Deletes the own segment at JVM exit (SIGTERM included) if close() did not; refers to the file only. */
    private final Thread shutdownHook;
    private ShmArena arena;
    /** Holds this rank's owner's lock of its segment (ShmSegment.lockOwner) until close. */
    private java.nio.channels.FileChannel ownerLock;

    /** How long close() keeps trying to put its goodbye into a full ring. */
    private static final long GOODBYE_WAIT_NANOS = 2_000_000_000L;

    private ShmTransport(int rank, int size, Path file, int ringBytes, int oversubscribedSpins) {
        super("shm", rank, size, new Inbox(size), new ArrayPool());
        this.file = file;
        this.outbound = new ShmRing[size];
        this.sendLocks = new ReentrantLock[size];
        this.peerSegments = new ByteBuffer[size];
        this.mailboxLocks = new Object[size];
        this.mailboxNext = new int[size];
        this.ringBytes = ringBytes;
        this.watch = new PeerWatch(rank, size, inbox);
        this.drain = new ShmDrain(rank, size, inbox, pool, watch);
        watch.drainBeforeDeclaringDead(() -> {
            if (!closing) {
                drain.drainAll();
            }
        });
        this.oversubscribedSpins = oversubscribedSpins;
        this.receiveWaits = ThreadLocal.withInitial(() -> new WaitStrategy(maxSpins));
        for (int i = 0; i < size; i++) {
            sendLocks[i] = new ReentrantLock();
            mailboxLocks[i] = new Object();
        }
        this.shutdownHook = addShutdownHook(rank, file);
    }

    private static Thread addShutdownHook(int rank, Path file) {
        Thread hook = new Thread(() -> ShmSegment.delete(file), "jccl-shm-cleanup-" + rank);
        try {
            Runtime.getRuntime().addShutdownHook(hook);
            return hook;
        } catch (IllegalStateException e) {
            return null; // the JVM is exiting already
        }
    }

    /** The segment directory: {@code JCCL_SHM_DIR}, else /dev/shm when it exists, else the temp dir. */
    public static Path defaultDirectory() {
        return io.jccl.JcclSettings.fromEnvironment().shmDirectory();
    }

    /** Connects rank {@code rank} of {@code size} ranks on this host, meeting them through {@code store}. */
    public static ShmTransport connect(int rank, int size, Store store, Path dir, int ringBytes, Duration timeout) {
        return connect(rank, size, store, dir, ringBytes, ARENA_DEFAULT, REGISTERED_DEFAULT, timeout);
    }

    /**
     * As {@link #connect(int, int, Store, Path, int, Duration)}, with exchange buffers of {@code arenaBytes} and a
     * registered region of {@code registeredBytes}.
     */
    public static ShmTransport connect(int rank, int size, Store store, Path dir, int ringBytes, int arenaBytes,
                                       int registeredBytes, Duration timeout) {
        return connect(rank, size, store, dir, ringBytes, arenaBytes, registeredBytes,
                WaitStrategy.OVERSUBSCRIBED_SPINS_DEFAULT, timeout);
    }

    /** As above, waits spinning {@code oversubscribedSpins} times when ranks outnumber cores. */
    public static ShmTransport connect(int rank, int size, Store store, Path dir, int ringBytes, int arenaBytes,
                                       int registeredBytes, int oversubscribedSpins, Duration timeout) {
        return connect(rank, size, store, dir, ringBytes, arenaBytes, registeredBytes, oversubscribedSpins, timeout,
                null);
    }

    /**
     * As above, for the ranks of one host of a larger job: rank {@code r} here is {@code worldRanks[r]} in the job,
     * and every message of this transport names it so, from its first (see {@link #nameRanks}); null: as above.
     */
    public static ShmTransport connect(int rank, int size, Store store, Path dir, int ringBytes, int arenaBytes,
                                       int registeredBytes, int oversubscribedSpins, Duration timeout,
                                       int[] worldRanks) {
        if (worldRanks != null && worldRanks.length != size) {
            throw new IllegalArgumentException("rank " + rank + ": " + worldRanks.length + " world ranks for the "
                    + size + " ranks of a shared-memory transport");
        }
        java.util.function.IntUnaryOperator w = r -> worldRanks == null ? r : worldRanks[r]; // messages only
        checkCapacity(ringBytes);
        checkArenaBytes(arenaBytes);
        checkRegisteredBytes(registeredBytes);
        removeStaleSegments(dir);
        if (rank == 0) {
            store.setString("shm/job", Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE));
        }
        String job;
        try {
            job = store.getString("shm/job", timeout);
        } catch (io.jccl.store.StoreException e) {
            throw SetUpTimeouts.namingPeer(e, w.applyAsInt(rank), w.applyAsInt(0),
                    ", on this host, did not name the shared-memory job", timeout);
        }
        Path file = dir.resolve("jccl-" + job + "-" + rank + ".shm");
        long length = segmentLength(size, ringBytes, arenaBytes, registeredBytes);
        if (length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("rank " + w.applyAsInt(rank) + ": a segment of " + length
                    + " bytes is over 2 GiB; "
                    + "use smaller rings (" + RING_ENV + "), exchange buffers (" + ARENA_ENV + ") or registered "
                    + "region (" + REGISTERED_ENV + ")");
        }
        // the owner's lock before the file is written (a live rank's segment of that name is left alone) and before
        // its pid is published: peers watch it
        java.nio.channels.FileChannel ownerLock = ShmSegment.lockOwner(w.applyAsInt(rank), file);
        MappedByteBuffer own = ShmSegment.create(w.applyAsInt(rank), file, length, ownerLock);
        ShmTransport t = new ShmTransport(rank, size, file, ringBytes, oversubscribedSpins);
        t.ownerLock = ownerLock;
        if (worldRanks != null) {
            t.nameRanks(worldRanks);
        }
        try {
            long pid = ProcessHandle.current().pid();
            ShmSegment.writeHeader(own, rank, size, ringBytes, arenaBytes, registeredBytes, pid,
                    Long.parseUnsignedLong(job, 16));
            ByteBuffer[] segments = new ByteBuffer[size];
            segments[rank] = own;
            t.drain.mailbox(new ShmAbortMailbox.Reader(own, size, ringBytes, rank));
            for (int src = 0; src < size; src++) {
                if (src != rank) {
                    t.drain.attach(src, ShmRing.consumer(own, ringOffset(src, ringBytes), ringBytes));
                }
            }
            store.setString("shm/segment/" + rank, file.toString());
            store.setString("shm/pid/" + rank, Long.toString(pid));
            for (int dst = 0; dst < size; dst++) {
                if (dst == rank) {
                    continue;
                }
                Path peerFile;
                long peerPid;
                try {
                    peerFile = Path.of(store.getString("shm/segment/" + dst, timeout));
                    peerPid = Long.parseLong(store.getString("shm/pid/" + dst, timeout));
                } catch (io.jccl.store.StoreException e) {
                    throw SetUpTimeouts.namingPeer(e, w.applyAsInt(rank), w.applyAsInt(dst),
                            ", on this host, did not publish its shared-memory segment", timeout);
                }
                t.watch.watch(dst, peerPid, peerFile);
                segments[dst] = ShmSegment.openPeer(w.applyAsInt(rank), w.applyAsInt(dst), peerFile, size, ringBytes,
                        arenaBytes, registeredBytes);
                t.peerSegments[dst] = segments[dst];
                t.outbound[dst] = ShmRing.producer(segments[dst], ringOffset(rank, ringBytes), ringBytes);
            }
            int cores = ShmSegment.cores(segments);
            t.maxSpins = WaitStrategy.spinsFor(size, cores, oversubscribedSpins);
            LOG.debug("{}: {} ranks on this host, {} cores for them, waits spin {} times", t.watch.name(rank), size,
                    cores, t.maxSpins);
            t.arena = new ShmArena(t, segments, ringBytes, arenaBytes, registeredBytes, t.maxSpins, size > cores);
            return t;
        } catch (RuntimeException e) {
            t.close();
            throw e;
        }
    }

    /**
     * Removes segments in {@code dir} whose owner process is gone (a crashed earlier job, a rank killed with SIGKILL),
     * and co-location probes an hour old; live owners' segments are left alone (their owner's lock tells). Every rank
     * does this at start; {@code jccl launch} also does it when its ranks have ended.
     */
    public static void removeStaleSegments(Path dir) {
        ShmSegment.removeStale(dir);
    }

    boolean isClosed() {
        return closing;
    }

    @Override
    protected JcclException closedException() {
        return new JcclException(watch.name(rank) + ": the shared-memory transport is closed", null);
    }

    /** {@code "rank N"}: rank {@code r} as the messages name it, in the job's numbering ({@link #nameRanks}). */
    String rankName(int r) {
        return watch.name(r);
    }

    // ------------------------------------------------------------------ send

    @Override
    public void send(int dst, FrameHeader header, Buf payload) {
        ReentrantLock lock = sendLocks[dst];
        lock.lock();
        try {
            ensureOpen();
            writeFrame(dst, header, payload, true, 0, false);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean send(int dst, FrameHeader header, Buf payload, long deadlineNanos) {
        ReentrantLock lock = sendLocks[dst];
        // another thread's send to dst may wait for room itself: this one waits for its turn only until its deadline,
        // or until its thread is interrupted (a send that need not wait goes out whatever its thread's status)
        if (!lock.tryLock()) {
            try {
                if (!lock.tryLock(Math.max(0, deadlineNanos - System.nanoTime()),
                        java.util.concurrent.TimeUnit.NANOSECONDS)) {
                    return false;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // kept for the caller
                throw interruptedSending(dst, "for another thread's send to it", e);
            }
        }
        try {
            ensureOpen();
            return writeFrame(dst, header, payload, true, deadlineNanos, true);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Writes a frame into {@code dst}'s ring; returns false if {@code wait} is false and the ring is full, or if
     * {@code deadline} and the clock passes {@code deadlineNanos} while it waits for room.
     */
    private boolean writeFrame(int dst, FrameHeader header, Buf payload, boolean wait, long deadlineNanos,
                               boolean deadline) {
        ShmRing ring = outbound[dst];
        int elem = payload.dtype().sizeBytes();
        int n = header.payloadCount();
        int maxMessage = ring.maxMessageLength();
        int maxPayload = (maxMessage - FrameDescriptor.HEADER_LENGTH) / elem * elem;
        int done = 0;
        boolean first = true;
        WaitStrategy idle = null;
        int waits = 0;
        long nextProbe = 0;
        while (first || done < n) {
            int room = first ? maxPayload : maxMessage / elem * elem;
            int m = Math.min(room / elem, n - done);
            int length = (first ? FrameDescriptor.HEADER_LENGTH : 0) + m * elem;
            int index = ring.tryClaim(first ? FIRST_FRAGMENT : NEXT_FRAGMENT, length);
            if (index < 0) {
                if (!wait || deadline && System.nanoTime() - deadlineNanos >= 0) {
                    return false;
                }
                ensureOpen(); // closed by another thread while this one waits for room
                if (Thread.currentThread().isInterrupted()) { // a park would return at once: a busy loop
                    throw interruptedSending(dst, "for room in its ring", null);
                }
                if (idle == null) {
                    idle = new WaitStrategy(maxSpins);
                }
                progress();
                watch.check(dst, "sending to");
                failIfAborted(dst, header);
                java.util.function.Function<FrameHeader, RuntimeException> probe = stuckSends;
                if (probe != null && (++waits & 15) == 0) { // a peer that refused the call never reads its frames
                    long now = System.nanoTime();
                    if (nextProbe == 0) { // not in a short wait: the probe reads every peer's control stream
                        nextProbe = now + PROBE_NANOS;
                    } else if (now - nextProbe >= 0) {
                        nextProbe = now + PROBE_NANOS;
                        RuntimeException why = probe.apply(header);
                        if (why != null) {
                            throw why;
                        }
                    }
                }
                idle.idle();
                continue;
            }
            ByteBuffer bb = ring.message(index, length);
            if (first) {
                FrameDescriptor.encode(header, bb);
            }
            if (m > 0) {
                payload.slice(done, m).writeTo(bb);
            }
            ring.commit();
            done += m;
            first = false;
            if (idle != null) {
                idle.reset();
            }
        }
        return true;
    }

    /** A send to {@code dst} that waited ({@code forWhat}), ended by an interrupt of its thread (its status kept). */
    private JcclException interruptedSending(int dst, String forWhat, InterruptedException cause) {
        return new JcclException(watch.name(rank) + ": interrupted while sending to " + watch.name(dst) + " (waiting "
                + forWhat + ")", cause);
    }

    /**
     * Ends a send that waits for room in {@code dst}'s ring when nobody will make any: an abort of the frame's
     * communicator (a peer's, this rank's own from {@code interrupt}, or one from another host through
     * {@link #watchOutsideAborts}), a lost peer, or {@code dst} having left
     * cleanly (its goodbye drained: its pid is no longer watched, so without this the wait would never end).
     */
    private void failIfAborted(int dst, FrameHeader header) {
        Frame abort = inbox.pendingAbort(dst, header.stream());
        java.util.function.IntFunction<Frame> outside = outsideAborts;
        if (abort == null && outside != null) {
            abort = outside.apply(header.stream());
        }
        if (abort == null) {
            return;
        }
        if (abort.isDeparture()) {
            throw new PeerLostException(dst, watch.name(dst) + " closed its communicator while " + watch.name(rank)
                    + " was sending to it (its ring is full and nobody will read it)", null);
        }
        throw new PeerLostException(abort.header().source(),
                new String((byte[]) abort.payload(), java.nio.charset.StandardCharsets.UTF_8), null);
    }

    // ------------------------------------------------------------------ receive

    /**
     * Aborts that reach this rank another way (a transport to other hosts: {@code HybridTransport}), by stream, or
     * null: a send waiting for room in a peer's ring also ends on one of those, as it does on an abort of its own
     * queues. The probe gives the abort's source in this transport's numbering.
     */
    private volatile java.util.function.IntFunction<Frame> outsideAborts;

    /**
     * Has a send that waits for room in a peer's ring also end on an abort that {@code probe} finds for the frame's
     * stream (its source in this transport's numbering): an abort from a rank of another host, which reaches this
     * rank over another transport, must stop that wait at once, not at the call's deadline.
     */
    public void watchOutsideAborts(java.util.function.IntFunction<Frame> probe) {
        outsideAborts = probe;
    }

    /** How often a send that waits for room asks {@link #watchStuckSends}'s probe, from its first millisecond on. */
    private static final long PROBE_NANOS = 1_000_000L;
    /** What a send that waits for room asks why it should stop ({@link #watchStuckSends}), or null. */
    private volatile java.util.function.Function<FrameHeader, RuntimeException> stuckSends;

    @Override
    public void watchStuckSends(java.util.function.Function<FrameHeader, RuntimeException> probe) {
        stuckSends = probe;
    }

    /** Whether a thread holds this rank's ring to {@code dst} (tests). */
    boolean sendLockHeld(int dst) {
        return sendLocks[dst].isLocked();
    }

    /** The lock a thread draining this rank's rings holds (tests). */
    ReentrantLock drainLock() {
        return drain.lock();
    }

    /** Moves every complete fragment waiting in this rank's rings into the inbox. */
    private void progress() {
        if (!closing) {
            drain.drain();
        }
    }

    /**
     * {@inheritDoc} An interrupt of the waiting thread ends the wait with {@link InterruptedException} (a park would
     * return at once while its status is set, and the wait would spin until the deadline).
     */
    @Override
    public Frame receive(int src, int stream, long deadlineNanos) throws InterruptedException {
        WaitStrategy idle = receiveWaits.get();
        while (true) {
            Frame f = inbox.poll(src, stream);
            if (f == null) {
                ensureOpen();
                progress();
                f = inbox.poll(src, stream);
            }
            if (f != null) {
                idle.reset();
                return f;
            }
            if (System.nanoTime() - deadlineNanos >= 0) {
                return null; // the caller's wait goes on with the next slice: keep its strategy's state
            }
            watch.check(src, "waiting for");
            if (Thread.interrupted()) {
                throw new InterruptedException(watch.name(rank) + ": interrupted while waiting for " + watch.name(src));
            }
            idle.idle();
        }
    }

    /**
     * Has this transport's messages name its rank {@code p} as {@code worldRanks[p]}: where it connects the ranks
     * of one host of a larger job, the ranks the program knows (its exceptions' rank fields stay this transport's).
     * The messages of its connection come before: {@link #connect(int, int, Store, Path, int, int, int, int,
     * Duration, int[])} names them from the start.
     */
    public void nameRanks(int[] worldRanks) {
        watch.names(worldRanks);
    }

    /** A wait in the arena, every 16th turn: fails if closed, drains the rings, checks that the peers live. */
    void checkPeersFromArena() {
        ensureOpen();
        progress();
        int dead = watch.check(-1, "waiting in the shared-memory arena");
        if (dead >= 0) {
            throw new PeerLostException(dead, watch.name(dead) + " died: its process is gone (noticed while "
                    + "waiting for it in the shared-memory arena)", null);
        }
    }

    @Override
    public Frame pendingAbort(int src, int stream) {
        if (closing) {
            Frame f = inbox.pendingAbort(src, stream);
            if (f != null) {
                return f;
            }
            throw closedException();
        }
        progress();
        return inbox.pendingAbort(src, stream);
    }

    @Override
    public SharedArena arena() {
        return arena;
    }

    @Override
    public FrameHeader peekHeader(int src, int stream) {
        ensureOpen();
        progress();
        return inbox.peekHeader(src, stream);
    }

    /**
     * {@inheritDoc} Into the peer's ring when this rank's ring there has room and no other thread holds it; else
     * into the abort mailbox beside that ring ({@link ShmAbortMailbox}), which the peer reads at its next drain.
     */
    @Override
    protected void sendAbort(int peer, Frame abort) {
        if (closing || outbound[peer] == null) {
            return; // closed: the peers were told goodbye
        }
        ReentrantLock lock = sendLocks[peer];
        String why;
        if (lock.tryLock()) {
            try {
                Buf reason = new Buf(DataType.UINT8, abort.payload(), 0, abort.header().payloadCount());
                if (writeFrame(peer, abort.header(), reason, false, 0, false)) {
                    return;
                }
                why = "the ring is full";
            } finally {
                lock.unlock();
            }
        } else {
            why = "another thread holds the ring";
        }
        LOG.debug("{}: {} to {}; the abort goes to its mailbox", watch.name(rank), why, watch.name(peer));
        synchronized (mailboxLocks[peer]) {
            ShmAbortMailbox.post(peerSegments[peer], rank, ringBytes, mailboxNext[peer]++, abort);
        }
    }

    /**
     * Says goodbye to the peers and deletes this rank's segment file. Nothing is unmapped: a thread of this rank
     * still inside a call goes on reading valid memory and fails at its next step (see the class comment).
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closing) {
                return;
            }
            closing = true;
        }
        // a goodbye that does not fit a full ring is retried while the peer drains it, for a bounded time, and then
        // goes to the peer's abort mailbox: a peer that never learns of the departure would wait for this rank until
        // its deadline
        FrameHeader bye = Frame.goodbye(rank);
        java.util.BitSet pending = new java.util.BitSet(size);
        for (int peer = 0; peer < size; peer++) {
            if (outbound[peer] != null) {
                pending.set(peer);
            }
        }
        long until = System.nanoTime() + GOODBYE_WAIT_NANOS;
        while (!pending.isEmpty()) {
            for (int peer = pending.nextSetBit(0); peer >= 0; peer = pending.nextSetBit(peer + 1)) {
                if (!sendLocks[peer].tryLock()) {
                    continue; // a send in flight (it fails now that the transport is closed): try again
                }
                try {
                    if (writeFrame(peer, bye, new Buf(DataType.UINT8, new byte[0], 0, 0), false, 0, false)) {
                        pending.clear(peer);
                    }
                } catch (RuntimeException e) {
                    LOG.debug("{}: cannot say goodbye to {}: {}", watch.name(rank), watch.name(peer), e.toString());
                    pending.clear(peer);
                } finally {
                    sendLocks[peer].unlock();
                }
            }
            if (pending.isEmpty() || System.nanoTime() - until >= 0) {
                break;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(200_000L);
        }
        for (int peer = pending.nextSetBit(0); peer >= 0; peer = pending.nextSetBit(peer + 1)) {
            LOG.debug("{}: the ring to {} stayed full for {} ms: the goodbye goes to its abort mailbox",
                    watch.name(rank), watch.name(peer), GOODBYE_WAIT_NANOS / 1_000_000);
            synchronized (mailboxLocks[peer]) {
                ShmAbortMailbox.post(peerSegments[peer], rank, ringBytes, mailboxNext[peer]++,
                        new Frame(bye, new byte[0]));
            }
        }
        ShmSegment.delete(file);
        watch.close();
        ShmSegment.releaseOwner(file, ownerLock);
        if (shutdownHook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException e) {
                // the JVM is shutting down: the hook runs (or ran) anyway, and deleting twice is harmless
            }
        }
    }

    /** The segment file of this rank (for tests and diagnostics). */
    public File segmentFile() {
        return file.toFile();
    }
}
