package io.jccl.transport.shm;

import io.jccl.DataType;
import io.jccl.JcclException;
import io.jccl.core.Buf;
import io.jccl.rendezvous.Store;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameFormatException;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Inbox;
import io.jccl.transport.PeerLostException;
import io.jccl.transport.Transport;
import io.jccl.transport.WaitStrategy;
import io.jccl.transport.AbstractArena;
import io.jccl.transport.SharedArena;
import io.jccl.ReduceOp;
import io.jccl.reduce.Reductions;
import org.agrona.IoUtil;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.ReentrantLock;

import static io.jccl.transport.shm.ShmSegmentDescriptor.*;

/**
 * Ranks that are processes on one host, through memory-mapped files: every rank owns a segment holding one
 * single-producer single-consumer ring (Agrona's {@link OneToOneRingBuffer}) per source rank, laid out by
 * {@link ShmSegmentDescriptor}. A frame is written into the destination's ring in fragments of at most the
 * ring's maximum message length, straight from the source array; the owner reassembles frames into its
 * {@link Inbox}.
 *
 * <p>No background threads: a rank makes progress (drains every ring into its inbox) whenever it waits, whether
 * to receive or for space to send, so two ranks sending to each other through full rings cannot deadlock.
 * Waiting spins only while the ranks on this host do not outnumber its cores, then yields, then parks for up to
 * 1 ms at a time, so a rank that waits long for a late peer uses little CPU. A peer whose process has died is
 * noticed within about 100 ms (its pid is checked while waiting) and named in the error. Segments are removed on
 * close, and segments of dead jobs in the same directory are removed at start.
 */
public final class ShmTransport implements Transport {
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
    private static final long LIVENESS_CHECK_NANOS = 100_000_000L;
    private static final sun.misc.Unsafe UNSAFE = org.agrona.UnsafeAccess.UNSAFE;
    /** Unsafe's base offset of the array class of every DataType, by ordinal. */
    private static final long[] ARRAY_BASE = new long[DataType.values().length];
    private static final long COPY_PIECE = 1 << 20;

    static {
        for (DataType dt : DataType.values()) {
            ARRAY_BASE[dt.ordinal()] = UNSAFE.arrayBaseOffset(dt.arrayClass());
        }
    }

    private final int rank;
    private final int size;
    private final Path file;
    private final MappedByteBuffer own;
    private final MappedByteBuffer[] mapped;
    private final OneToOneRingBuffer[] inbound;
    private final OneToOneRingBuffer[] outbound;
    private final ReentrantLock[] sendLocks;
    private final ReentrantLock drainLock = new ReentrantLock();
    private final long[] peerPids;
    private final Path[] peerFiles;
    private final Reassembly[] partial;
    private final Inbox inbox;
    private final io.jccl.transport.ArrayPool pool = new io.jccl.transport.ArrayPool();
    private final int maxSpins;
    private final int arenaBytes;
    /**
     * Each receiving thread's wait, kept across the slices of one wait (see {@link #receive}), so that a rank
     * waiting long for a late peer parks instead of yielding again at every slice.
     */
    private final ThreadLocal<WaitStrategy> receiveWaits;
    private final int registeredBytes;
    private final ReentrantLock arenaLock = new ReentrantLock();
    private Arena arena;
    private volatile boolean closed;
    private long lastLivenessCheck;

    /** A frame from one source being reassembled from its fragments. */
    private static final class Reassembly {
        FrameHeader header;
        DataType dtype;
        Object array;
        int filled;
    }

    private ShmTransport(int rank, int size, Path file, MappedByteBuffer own, int localRanks, int arenaBytes,
                         int registeredBytes) {
        this.rank = rank;
        this.arenaBytes = arenaBytes;
        this.registeredBytes = registeredBytes;
        this.size = size;
        this.file = file;
        this.own = own;
        this.mapped = new MappedByteBuffer[size];
        this.inbound = new OneToOneRingBuffer[size];
        this.outbound = new OneToOneRingBuffer[size];
        this.sendLocks = new ReentrantLock[size];
        this.peerPids = new long[size];
        this.peerFiles = new Path[size];
        this.partial = new Reassembly[size];
        this.inbox = new Inbox(size);
        this.maxSpins = WaitStrategy.spinsFor(localRanks);
        this.receiveWaits = ThreadLocal.withInitial(() -> new WaitStrategy(maxSpins));
        for (int i = 0; i < size; i++) {
            sendLocks[i] = new ReentrantLock();
            partial[i] = new Reassembly();
        }
    }

    /** The segment directory: {@code JCCL_SHM_DIR}, else /dev/shm when it exists, else the temp dir. */
    public static Path defaultDirectory() {
        String env = System.getenv(DIR_ENV);
        if (env != null && !env.isBlank()) {
            return Path.of(env.trim());
        }
        Path shm = Path.of("/dev/shm");
        return Files.isDirectory(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
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
        checkCapacity(ringBytes);
        checkArenaBytes(arenaBytes);
        checkRegisteredBytes(registeredBytes);
        removeStaleSegments(dir);
        if (rank == 0) {
            store.setString("shm/job", Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE));
        }
        String job = store.getString("shm/job", timeout);
        Path file = dir.resolve("jccl-" + job + "-" + rank + ".shm");
        long length = segmentLength(size, ringBytes, arenaBytes, registeredBytes);
        if (length > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("rank " + rank + ": a segment of " + length + " bytes is over 2 GiB; "
                    + "use smaller rings (" + RING_ENV + "), exchange buffers (" + ARENA_ENV + ") or registered "
                    + "region (" + REGISTERED_ENV + ")");
        }
        MappedByteBuffer own;
        try {
            own = IoUtil.mapNewFile(file.toFile(), length, false);
        } catch (RuntimeException e) {
            throw new JcclException("rank " + rank + ": cannot create the shared-memory segment " + file + " ("
                    + length + " bytes): " + e.getMessage(), e);
        }
        own.order(ByteOrder.nativeOrder());
        long pid = ProcessHandle.current().pid();
        own.putInt(MAGIC_OFFSET, MAGIC).putInt(VERSION_OFFSET, VERSION).putInt(WORLD_SIZE_OFFSET, size)
                .putInt(OWNER_RANK_OFFSET, rank).putInt(RING_CAPACITY_OFFSET, ringBytes)
                .putInt(RING_STRIDE_OFFSET, ringStride(ringBytes)).putLong(OWNER_PID_OFFSET, pid)
                .putLong(JOB_ID_OFFSET, Long.parseUnsignedLong(job, 16)).putInt(ARENA_BYTES_OFFSET, arenaBytes)
                .putInt(REGISTERED_BYTES_OFFSET, registeredBytes);
        new UnsafeBuffer(own).putIntOrdered(READY_OFFSET, 1);
        ShmTransport t = new ShmTransport(rank, size, file, own, size, arenaBytes, registeredBytes);
        try {
            for (int src = 0; src < size; src++) {
                if (src != rank) {
                    t.inbound[src] = new OneToOneRingBuffer(ring(own, src, ringBytes));
                }
            }
            store.setString("shm/segment/" + rank, file.toString());
            store.setString("shm/pid/" + rank, Long.toString(pid));
            for (int dst = 0; dst < size; dst++) {
                if (dst == rank) {
                    continue;
                }
                Path peerFile = Path.of(store.getString("shm/segment/" + dst, timeout));
                t.peerFiles[dst] = peerFile;
                t.peerPids[dst] = Long.parseLong(store.getString("shm/pid/" + dst, timeout));
                MappedByteBuffer m = IoUtil.mapExistingFile(peerFile.toFile(), "jccl segment of rank " + dst);
                m.order(ByteOrder.nativeOrder());
                if (m.getInt(MAGIC_OFFSET) != MAGIC || m.getInt(VERSION_OFFSET) != VERSION
                        || new UnsafeBuffer(m).getIntVolatile(READY_OFFSET) != 1
                        || m.getInt(RING_CAPACITY_OFFSET) != ringBytes || m.getInt(WORLD_SIZE_OFFSET) != size
                        || m.getInt(ARENA_BYTES_OFFSET) != arenaBytes
                        || m.getInt(REGISTERED_BYTES_OFFSET) != registeredBytes) {
                    throw new JcclException("rank " + rank + ": the segment " + peerFile + " of rank " + dst
                            + " is not a version " + VERSION + " jccl segment of this job", null);
                }
                t.mapped[dst] = m;
                t.outbound[dst] = new OneToOneRingBuffer(ring(m, rank, ringBytes));
            }
            t.arena = t.new Arena(ringBytes);
            return t;
        } catch (RuntimeException e) {
            t.close();
            throw e;
        }
    }

    private static AtomicBuffer ring(MappedByteBuffer segment, int source, int capacity) {
        long offset = ringOffset(source, capacity);
        return new UnsafeBuffer(segment, (int) offset, capacity + org.agrona.concurrent.ringbuffer
                .RingBufferDescriptor.TRAILER_LENGTH);
    }

    /** Removes segments in {@code dir} whose owner process is gone (a crashed earlier job). */
    static void removeStaleSegments(Path dir) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "jccl-*.shm")) {
            for (Path f : files) {
                long pid = -1;
                try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "r")) {
                    if (raf.length() >= HEADER_LENGTH) {
                        ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.nativeOrder());
                        raf.getChannel().read(b, OWNER_PID_OFFSET);
                        pid = b.getLong(0);
                    }
                } catch (IOException e) {
                    continue;
                }
                if (pid <= 0 && Files.getLastModifiedTime(f).toMillis() > System.currentTimeMillis() - 60_000) {
                    continue; // being created right now: its owner has not written its pid yet
                }
                boolean alive = pid > 0 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
                if (!alive) {
                    LOG.info("removing the shared-memory segment {} of a job that is gone (pid {})", f, pid);
                    Files.deleteIfExists(f);
                }
            }
        } catch (IOException e) {
            LOG.debug("cannot scan {} for stale segments: {}", dir, e.toString());
        }
    }

    // ------------------------------------------------------------------ send

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public String name() {
        return "shm";
    }

    @Override
    public void send(int dst, FrameHeader header, DataType dtype, Object payload, int offset) {
        ReentrantLock lock = sendLocks[dst];
        lock.lock();
        try {
            if (closed) {
                throw new JcclException("rank " + rank + ": the shared-memory transport is closed", null);
            }
            writeFrame(dst, header, dtype, payload, offset, true);
        } finally {
            lock.unlock();
        }
    }

    /** Writes a frame into {@code dst}'s ring; returns false if {@code wait} is false and the ring is full. */
    private boolean writeFrame(int dst, FrameHeader header, DataType dtype, Object payload, int offset,
                               boolean wait) {
        OneToOneRingBuffer ring = outbound[dst];
        int elem = dtype.sizeBytes();
        int n = header.payloadCount();
        int maxPayload = (ring.maxMsgLength() - FrameDescriptor.HEADER_LENGTH) / elem * elem;
        int done = 0;
        boolean first = true;
        IdleStrategy idle = null;
        while (first || done < n) {
            int room = first ? maxPayload : ring.maxMsgLength() / elem * elem;
            int m = Math.min(room / elem, n - done);
            int length = (first ? FrameDescriptor.HEADER_LENGTH : 0) + m * elem;
            int index = ring.tryClaim(first ? FIRST_FRAGMENT : NEXT_FRAGMENT, length);
            if (index < 0) {
                if (!wait) {
                    return false;
                }
                if (idle == null) {
                    idle = idleStrategy();
                }
                progress();
                checkAlive(dst, "sending to");
                idle.idle();
                continue;
            }
            ByteBuffer bb = ring.buffer().byteBuffer().duplicate().order(ByteOrder.LITTLE_ENDIAN);
            int at = ring.buffer().wrapAdjustment() + index;
            bb.limit(at + length).position(at);
            if (first) {
                FrameDescriptor.encode(header, bb);
            }
            if (m > 0) {
                new Buf(dtype, payload, offset + done, m).writeTo(bb);
            }
            ring.commit(index);
            done += m;
            first = false;
            if (idle != null) {
                idle.reset();
            }
        }
        return true;
    }

    private IdleStrategy idleStrategy() {
        return new WaitStrategy(maxSpins);
    }

    // ------------------------------------------------------------------ receive

    /** Moves every complete fragment waiting in this rank's rings into the inbox. */
    private void progress() {
        if (!drainLock.tryLock()) {
            return;
        }
        try {
            if (closed) {
                return;
            }
            for (int src = 0; src < size; src++) {
                OneToOneRingBuffer ring = inbound[src];
                if (ring != null) {
                    int s = src;
                    ring.read((type, buffer, index, length) -> onFragment(s, type, buffer, index, length));
                }
            }
        } finally {
            drainLock.unlock();
        }
    }

    private void onFragment(int src, int type, org.agrona.MutableDirectBuffer buffer, int index, int length) {
        ByteBuffer bb = buffer.byteBuffer().duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int at = buffer.wrapAdjustment() + index;
        bb.limit(at + length).position(at);
        Reassembly r = partial[src];
        try {
            if (type == FIRST_FRAGMENT) {
                FrameHeader h = FrameDescriptor.decode(bb);
                if (h.type() == FrameDescriptor.TYPE_GOODBYE) {
                    peerPids[src] = -1; // it left cleanly: its process may exit now without that being a failure
                    inbox.peerClosed(src, Frame.departed(src));
                    return;
                }
                r.header = h;
                r.dtype = DataType.fromId(h.dtype());
                r.array = pool.take(r.dtype, h.payloadCount());
                r.filled = 0;
            } else if (r.header == null) {
                throw new FrameFormatException("a continuation fragment with no frame started");
            }
            int m = bb.remaining() / r.dtype.sizeBytes();
            if (r.filled + m > r.header.payloadCount()) {
                throw new FrameFormatException("fragments exceed the announced payload count "
                        + r.header.payloadCount());
            }
            new Buf(r.dtype, r.array, r.filled, m).readFrom(bb);
            r.filled += m;
            if (r.filled == r.header.payloadCount()) {
                inbox.deliver(src, new Frame(r.header, r.array));
                r.header = null;
                r.array = null;
            }
        } catch (FrameFormatException | IllegalArgumentException e) {
            LOG.error("rank {}: corrupt frame in the ring from rank {}: {}", rank, src, e.getMessage());
            inbox.peerLost(Frame.peerGone(src, "corrupt frame in the shared-memory ring from rank " + src + ": "
                    + e.getMessage()));
        }
    }

    @Override
    public Frame receive(int src, int stream, long deadlineNanos) {
        WaitStrategy idle = receiveWaits.get();
        while (true) {
            Frame f = inbox.poll(src, stream);
            if (f == null) {
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
            checkAlive(src, "waiting for");
            idle.idle();
        }
    }

    /** Every ~100 ms: a peer whose process is gone is reported to every communicator. */
    private int checkAlive(int peer, String doing) {
        long now = System.nanoTime();
        if (now - lastLivenessCheck < LIVENESS_CHECK_NANOS) {
            return -1;
        }
        int dead = -1;
        lastLivenessCheck = now;
        for (int p = 0; p < size; p++) {
            long pid = peerPids[p];
            if (p == rank || pid <= 0) {
                continue;
            }
            boolean alive = ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
            if (!alive) {
                peerPids[p] = -1;
                try {
                    Files.deleteIfExists(peerFiles[p]); // its owner cannot remove it any more
                } catch (IOException e) {
                    LOG.debug("cannot remove the segment of dead rank {}: {}", p, e.toString());
                }
                inbox.peerLost(Frame.peerGone(p, "rank " + p + " (pid " + pid + ") died: its process is gone (noticed while "
                        + doing + (peer >= 0 ? " rank " + peer : "") + ")"));
                dead = dead < 0 ? p : dead;
                if (doing.startsWith("sending") && p == peer) {
                    throw new PeerLostException(p, "rank " + p + " (pid " + pid + ") died: its process is gone "
                            + "(noticed while sending to it)", null);
                }
            }
        }
        return dead;
    }

    @Override
    public Frame pendingAbort(int src, int stream) {
        progress();
        return inbox.pendingAbort(src, stream);
    }

    @Override
    public SharedArena arena() {
        return arena;
    }

    /**
     * This rank's view of the exchange buffers and control blocks of every segment (see
     * {@link ShmSegmentDescriptor}). Typed bulk copies move data between Java arrays and the mapped buffers;
     * reductions copy a peer's data in chunks into a small Java array and reduce from there (the reduction kernels
     * are vectorised on arrays, not on mapped memory).
     */
    private final class Arena extends AbstractArena {
        private static final int CHUNK_BYTES = 32 << 10;
        private final long base;
        private final long registeredBase;
        private final long ownAddress;
        private long nextFree;
        private final UnsafeBuffer[] control = new UnsafeBuffer[size];
        private final ByteBuffer[] memory = new ByteBuffer[size];
        private final long[] addresses = new long[size];
        private final Object[] chunks = new Object[DataType.values().length];

        Arena(int ringBytes) {
            super(rank, size, size);
            this.base = arenaOffset(size, ringBytes);
            this.registeredBase = registeredOffset(size, ringBytes, arenaBytes);
            this.ownAddress = org.agrona.BufferUtil.address(own);
            for (int r = 0; r < size; r++) {
                MappedByteBuffer m = r == rank ? own : mapped[r];
                control[r] = new UnsafeBuffer(m, 0, HEADER_LENGTH);
                memory[r] = m.duplicate().order(ByteOrder.nativeOrder());
                addresses[r] = org.agrona.BufferUtil.address(m);
            }
        }

        @Override
        public int bufferBytes() {
            return arenaBytes;
        }

        @Override
        public void enter() {
            arenaLock.lock();
            if (closed) {
                arenaLock.unlock();
                throw new JcclException("rank " + rank + ": the shared-memory transport is closed", null);
            }
        }

        @Override
        public void exit() {
            arenaLock.unlock();
        }

        /**
         * The address of element {@code at} of rank r's exchange buffer {@code half} (or exposed buffer), after
         * checking that {@code n} elements from there lie inside it.
         */
        private long address(int r, int half, int at, int n, DataType dt) {
            int elem = dt.sizeBytes();
            long start;
            long end;
            if (half == EXPOSED) {
                start = registeredBase + control[r].getLong(exposedOffsetOffset());
                end = registeredBase + registeredBytes;
            } else {
                start = base + (long) half * arenaBytes;
                end = start + arenaBytes;
            }
            long from = start + (long) at * elem;
            if (at < 0 || n < 0 || from + (long) n * elem > end) {
                throw new IndexOutOfBoundsException("shared buffer range out of bounds: rank=" + r + ", half=" + half
                        + ", at=" + at + ", count=" + n);
            }
            return addresses[r] + from;
        }

        @Override
        public io.jccl.Tensor allocate(DataType dtype, int count) {
            long bytes = (long) count * dtype.sizeBytes();
            synchronized (this) {
                long at = (nextFree + 63) & ~63L;
                if (at + bytes > registeredBytes) {
                    throw new IllegalArgumentException("rank " + rank + ": the registered region (" + registeredBytes
                            + " bytes, " + REGISTERED_ENV + ") has no room for " + bytes + " more bytes (" + at
                            + " in use)");
                }
                nextFree = at + bytes;
                ByteBuffer b = own.duplicate();
                b.limit((int) (registeredBase + at + bytes)).position((int) (registeredBase + at));
                return io.jccl.Tensor.of(b.slice().order(ByteOrder.nativeOrder()), dtype);
            }
        }

        @Override
        public boolean exposeRegistered(io.jccl.Tensor t) {
            ByteBuffer b = t.byteBuffer();
            if (b == null || !b.isDirect()) {
                return false;
            }
            long address = org.agrona.BufferUtil.address(b) + b.position() - ownAddress - registeredBase;
            if (address < 0 || address + b.remaining() > registeredBytes) {
                return false;
            }
            control[rank].putLong(exposedOffsetOffset(), address);
            return true;
        }

        @Override
        public void copyExposed(int r, int at, int n, DataType dtype) {
            copy(null, address(r, EXPOSED, at, n, dtype), null, address(rank, EXPOSED, at, n, dtype),
                    (long) n * dtype.sizeBytes());
        }

        @Override
        public boolean canExpose() {
            return false; // a peer process cannot read this process's heap
        }

        @Override
        public void expose(Buf b) {
            throw new IllegalStateException("rank " + rank + ": processes cannot read each other's heap (canExpose() is "
                    + "false)");
        }

        @Override
        public void put(int half, int at, Buf src) {
            DataType dt = src.dtype();
            copy(src.array(), arrayOffset(src, 0), null, address(rank, half, at, src.count(), dt), src.byteSize());
        }

        @Override
        public void get(int r, int half, int at, Buf dst) {
            DataType dt = dst.dtype();
            copy(null, address(r, half, at, dst.count(), dt), dst.array(), arrayOffset(dst, 0), dst.byteSize());
        }

        @Override
        public void reduce(int r, int half, int at, Buf acc, ReduceOp op) {
            DataType dt = acc.dtype();
            if ((op == ReduceOp.SUM || op == ReduceOp.AVG) && (dt == DataType.FLOAT32 || dt == DataType.FLOAT64)) {
                // the common case, summed straight out of the mapping: half the memory traffic of copy-then-add
                long address = address(r, half, at, acc.count(), dt);
                if (dt == DataType.FLOAT32) {
                    sumFloats((float[]) acc.array(), acc.offset(), acc.count(), address);
                } else {
                    sumDoubles((double[]) acc.array(), acc.offset(), acc.count(), address);
                }
                return;
            }
            int chunk = CHUNK_BYTES / dt.sizeBytes();
            Object tmp = chunks[dt.ordinal()];
            if (tmp == null) {
                tmp = dt.newArray(chunk);
                chunks[dt.ordinal()] = tmp;
            }
            for (int done = 0; done < acc.count(); done += chunk) {
                int n = Math.min(chunk, acc.count() - done);
                get(r, half, at + done, new Buf(dt, tmp, 0, n));
                Reductions.reduce(dt, op, acc.array(), acc.offset() + done, tmp, 0, n);
            }
        }

        /** The Unsafe offset of element {@code i} of {@code b}'s array. */
        private long arrayOffset(Buf b, int i) {
            return ARRAY_BASE[b.dtype().ordinal()] + (long) (b.offset() + i) * b.dtype().sizeBytes();
        }

        /** Unsafe.copyMemory in pieces of at most 1 MiB, so that a long copy does not hold off safepoints. */
        private void copy(Object from, long fromOffset, Object to, long toOffset, long bytes) {
            for (long done = 0; done < bytes; done += COPY_PIECE) {
                long n = Math.min(COPY_PIECE, bytes - done);
                UNSAFE.copyMemory(from, fromOffset + done, to, toOffset + done, n);
            }
        }

        @Override
        public boolean sameSignature(int r, int half) {
            int at = signatureOffset(half);
            UnsafeBuffer mine = control[rank];
            UnsafeBuffer theirs = control[r];
            // every field but the source (bytes 8-11)
            return mine.getLong(at) == theirs.getLong(at)
                    && mine.getInt(at + FrameDescriptor.ROOT_OFFSET) == theirs.getInt(at + FrameDescriptor.ROOT_OFFSET)
                    && mine.getLong(at + 16) == theirs.getLong(at + 16) && mine.getLong(at + 24) == theirs.getLong(at + 24)
                    && mine.getLong(at + 32) == theirs.getLong(at + 32) && mine.getLong(at + 40) == theirs.getLong(at + 40);
        }

        private void sumFloats(float[] acc, int offset, int n, long address) {
            for (int i = 0; i < n; i++) {
                acc[offset + i] += UNSAFE.getFloat(address + 4L * i);
            }
        }

        private void sumDoubles(double[] acc, int offset, int n, long address) {
            for (int i = 0; i < n; i++) {
                acc[offset + i] += UNSAFE.getDouble(address + 8L * i);
            }
        }

        @Override
        public void putSignature(int half, FrameHeader signature) {
            ByteBuffer w = own.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            w.position(signatureOffset(half));
            FrameDescriptor.encode(signature, w);
        }

        @Override
        public FrameHeader signature(int r, int half) {
            ByteBuffer w = memory[r].duplicate().order(ByteOrder.LITTLE_ENDIAN);
            w.limit(signatureOffset(half) + FrameDescriptor.HEADER_LENGTH).position(signatureOffset(half));
            try {
                return FrameDescriptor.decode(w);
            } catch (FrameFormatException e) {
                return null;
            }
        }

        @Override
        public void publish(int which, long value) {
            control[rank].putLongOrdered(counterOffset(which), value);
        }

        @Override
        public long counter(int r, int which) {
            return control[r].getLongVolatile(counterOffset(which));
        }

        @Override
        protected void checkPeers() {
            progress();
            int dead = checkAlive(-1, "waiting in the shared-memory arena");
            if (dead >= 0) {
                throw new PeerLostException(dead, "rank " + dead + " died: its process is gone (noticed while "
                        + "waiting for it in the shared-memory arena)", null);
            }
        }
    }

    @Override
    public FrameHeader peekHeader(int src, int stream) {
        progress();
        return inbox.peekHeader(src, stream);
    }

    @Override
    public void release(Frame frame) {
        pool.giveBack(frame);
    }

    @Override
    public void abortPeers(int[] peers, FrameHeader header, String reason) {
        byte[] bytes = reason.getBytes(StandardCharsets.UTF_8);
        FrameHeader h = header.withStep(header.step(), bytes.length);
        for (int peer : peers) {
            if (peer == rank || outbound[peer] == null) {
                continue;
            }
            ReentrantLock lock = sendLocks[peer];
            if (lock.tryLock()) {
                try {
                    if (!writeFrame(peer, h, DataType.UINT8, bytes, 0, false)) {
                        LOG.debug("rank {}: the ring to rank {} is full; it will learn of the abort another way",
                                rank, peer);
                    }
                } finally {
                    lock.unlock();
                }
            }
        }
    }

    @Override
    public void interrupt(Frame abort) {
        inbox.deliver(rank, abort);
        Arena a = arena;
        if (a != null) {
            a.interrupt();
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        FrameHeader bye = Frame.goodbye(rank);
        for (int peer = 0; peer < size; peer++) {
            if (outbound[peer] != null && sendLocks[peer].tryLock()) {
                try {
                    writeFrame(peer, bye, DataType.UINT8, new byte[0], 0, false);
                } finally {
                    sendLocks[peer].unlock();
                }
            }
        }
        // unmap only what no other thread can touch any more: a mapping in use is left to the garbage collector
        if (!tryLock(arenaLock)) {
            LOG.debug("rank {}: a call still uses the shared arena; its mappings are left to the collector", rank);
            deleteOwnFile();
            return;
        }
        for (int peer = 0; peer < size; peer++) {
            if (mapped[peer] != null && tryLock(sendLocks[peer])) {
                try {
                    IoUtil.unmap(mapped[peer]);
                    mapped[peer] = null;
                    outbound[peer] = null;
                } finally {
                    sendLocks[peer].unlock();
                }
            }
        }
        deleteOwnFile();
        if (tryLock(drainLock)) {
            try {
                java.util.Arrays.fill(inbound, null);
                IoUtil.unmap(own);
            } finally {
                drainLock.unlock();
            }
        }
        arenaLock.unlock();
    }

    private void deleteOwnFile() {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            LOG.warn("rank {}: cannot remove {}: {}", rank, file, e.toString());
        }
    }

    private static boolean tryLock(ReentrantLock lock) {
        try {
            return lock.tryLock(1, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The segment file of this rank (for tests and diagnostics). */
    public File segmentFile() {
        return file.toFile();
    }
}
