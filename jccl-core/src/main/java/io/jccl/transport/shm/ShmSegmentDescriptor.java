package io.jccl.transport.shm;

/**
 * Byte layout of a rank's shared-memory segment, version 7: the file {@code jccl-<job>-<rank>.shm} (under
 * {@code /dev/shm} by default) that holds every ring into that rank and the rank's part of the
 * {@link io.jccl.transport.SharedArena} (control block and two exchange buffers). Native byte order.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +---------------------------------------------------------------+
 * |                   magic 0x4A435348 "JCSH"                     |  0
 * +---------------------------------------------------------------+
 * |                         version (7)                           |  4
 * +---------------------------------------------------------------+
 * |                         world size                            |  8
 * +---------------------------------------------------------------+
 * |                         owner rank                            | 12
 * +---------------------------------------------------------------+
 * |                   ring capacity (power of 2)                  | 16
 * +---------------------------------------------------------------+
 * |        ring stride (capacity + trailer, rounded to 4 KiB)     | 20
 * +---------------------------------------------------------------+
 * |                          owner pid                            | 24
 * |                                                               |
 * +---------------------------------------------------------------+
 * |                            job id                             | 32
 * |                                                               |
 * +---------------------------------------------------------------+
 * |                 ready (written last, release)                 | 40
 * +---------------------------------------------------------------+
 * |               exchange buffer bytes (multiple of 4 KiB)       | 44
 * +---------------------------------------------------------------+
 * |               registered bytes (multiple of 4 KiB)            | 48
 * +---------------------------------------------------------------+
 * |   available processors (the owner JVM's count: affinity and   | 52
 * |   cgroup quota)                                               |
 * +---------------------------------------------------------------+
 * |                    zero up to 64                              |
 * +---------------------------------------------------------------+
 * |   allowed CPUs: the owner's affinity, a 1024-bit bitmap, 16   | 64
 * |   64-bit words (bit c of word c / 64); all zero: unknown      |
 * +---------------------------------------------------------------+
 * |                    zero up to CONTROL_OFFSET                  |
 * +---------------------------------------------------------------+
 * |   control block: abort doorbell (64-bit, atomic add) + pad    | 1024  (CONTROL_OFFSET)
 * |                  counter REDUCED (64-bit, release)  + pad     | 1088  (one 64-byte line each)
 * |                  counter LEFT    (64-bit, release)  + pad     | 1152
 * |                  exposed offset  (64-bit)                     | 1216  (into the registered region)
 * |                  exposed round   (64-bit)           + pad     | 1224  (the round it was exposed for)
 * +---------------------------------------------------------------+
 * |                    zero up to HEADER_LENGTH                   |
 * +---------------------------------------------------------------+
 * |   ring from rank 0: a ShmRing (below), stride bytes           | HEADER_LENGTH
 * +---------------------------------------------------------------+
 * |   ring from rank 1 ...            (the owner's own is unused) |
 * +---------------------------------------------------------------+
 * |   round line, half 0 (below), then exchange buffer half 0     | roundLineOffset(world, capacity,
 * |   from its byte 56: exchange buffer bytes                     |                 arena bytes, 0)
 * +---------------------------------------------------------------+
 * |   round line, half 1, then exchange buffer half 1 from its    | roundLineOffset(..., 1) = half 0's
 * |   byte 56                                                     |   + arena bytes + 64
 * +---------------------------------------------------------------+
 * |   zero up to the next 4 KiB                                   |
 * +---------------------------------------------------------------+
 * |   registered region: registered bytes, buffers handed out by  | registeredOffset(world, capacity,
 * |   Communicator.allocate (64-byte aligned, in order)           |                  arena bytes)
 * +---------------------------------------------------------------+
 *
 *  round line of half h (64-byte aligned: one cache line):
 * +---------------------------------------------------------------+
 * |   signature: the 48-byte frame header of the call whose round | 0   (SIGNATURE_IN_LINE)
 * |   last wrote this half (written on a call's first round)      |
 * +---------------------------------------------------------------+
 * |   ARRIVED stamp: the latest round of parity h at which the    | 48  (STAMP_IN_LINE)
 * |   owner arrived (64-bit, release store, written last)         |
 * +---------------------------------------------------------------+
 * |   exchange buffer half h, its first 8 bytes                   | 56  (BUFFER_IN_LINE)
 * +---------------------------------------------------------------+
 * </pre>
 *
 * <p>The processor count and the affinity let the ranks of a host count the cores they may run on together
 * ({@code io.jccl.transport.HostCpus}): a rank bound to one core sees one, yet has it to itself.
 *
 * <p>The round line puts what a peer reads first in a small round (the owner's arrival, its call's signature and
 * the start of its data) in one cache line, so that a 4- or 8-byte call crosses cores in one transfer (version 3
 * kept the counter, the signature and the data on three lines). The owner's ARRIVED counter is the larger of the
 * two stamps: a round of parity h is published in half h's stamp.
 *
 * <p>Each ring ({@code ShmRing}) has one producer (the source rank, which maps this file) and one consumer (the
 * owner). Its records fill a power-of-two area of {@code capacity} bytes, followed by a trailer of
 * {@link #RING_TRAILER_LENGTH} bytes that holds the two positions, each on its own 128-byte line (a pair of cache
 * lines, so that the adjacent-line prefetcher does not make producer and consumer share one):
 *
 * <pre>
 *  ring, at ringOffset(source, capacity):
 * +---------------------------------------------------------------+
 * |   records: capacity bytes, each record 8-byte aligned         | 0
 * +---------------------------------------------------------------+
 * |   tail position (64-bit; producer, release store)  + pad      | capacity      (RING_TAIL_OFFSET)
 * +---------------------------------------------------------------+
 * |   head position (64-bit; consumer, release store)  + pad      | capacity + 128 (RING_HEAD_OFFSET)
 * +---------------------------------------------------------------+
 * |   abort mailbox: ABORT_SLOTS (3) slots (below) of             | capacity + 256 (abortMailboxOffset)
 * |   ABORT_SLOT_LENGTH (1280) bytes each                         |
 * +---------------------------------------------------------------+
 * |   zero up to the stride                                       |
 * +---------------------------------------------------------------+
 *
 *  abort mailbox slot (version 7), written by the ring's source, read by the owner; the length and the frame are
 *  little-endian, as every frame:
 * +---------------------------------------------------------------+
 * |   sequence (64-bit, native order): odd while the source       | 0  (ABORT_SEQUENCE_IN_SLOT)
 * |   writes, even once complete (release store); 0: never written|
 * +---------------------------------------------------------------+
 * |   frame length: 48 + reason bytes (32-bit)       + pad to 16  | 8  (ABORT_LENGTH_IN_SLOT)
 * +---------------------------------------------------------------+
 * |   an abort frame: its 48-byte header, then its UTF-8 reason   | 16 (ABORT_FRAME_IN_SLOT)
 * |   (cut, at a character, to fit the slot)                      |
 * +---------------------------------------------------------------+
 *
 *  record, at index = position &amp; (capacity - 1):
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +---------------------------------------------------------------+
 * |          record length: 8 + message length (bytes)            |  0
 * +---------------------------------------------------------------+
 * |   type: FIRST_FRAGMENT, NEXT_FRAGMENT, or PADDING (-1)        |  4
 * +---------------------------------------------------------------+
 * |   message: record length - 8 bytes; unused up to 8-aligned    |  8
 * +---------------------------------------------------------------+
 * </pre>
 *
 * <p>Positions count bytes from the ring's start and only grow; {@code tail - head} is the number of bytes in
 * use, at most {@code capacity}. The producer writes a record (header and message) at its tail with plain stores,
 * then publishes it by a release store of the tail advanced by the record's length rounded up to 8; the consumer
 * reads the tail with an acquire load, reads every record up to it, and then releases the space with a release
 * store of the head. A record never wraps: when one does not fit before the end of the area, the producer fills
 * the rest with a {@link #PADDING} record (which the consumer skips) and writes the record at index 0. A message
 * is at most {@code capacity / 8} bytes ({@code ShmRing.maxMessageLength()}).
 *
 * <p>A message in a ring is a fragment of a frame: type {@link #FIRST_FRAGMENT} starts with the frame header of
 * {@link io.jccl.transport.FrameDescriptor} followed by payload bytes; {@link #NEXT_FRAGMENT} carries more payload
 * bytes of the same frame. Invariant: a source writes only the ring at its own index, and the owner sets
 * {@code ready} only after the whole header is written, so a source that sees {@code ready == 1} may write.
 *
 * <p>The control block and the exchange buffers are written only by the owner and read by every peer: the owner
 * fills a buffer and its round line's signature, then publishes a counter (for ARRIVED: the round line's stamp)
 * with a release store; a peer reads the counter with an acquire load before it reads the buffer. Counters only
 * grow (see {@link io.jccl.transport.SharedArena}). For a collective on a registered buffer the owner writes the
 * buffer's offset in its registered region to "exposed offset" and the call's round to "exposed round" before it
 * publishes ARRIVED, and peers read that buffer in place; a peer that passed an array (whose "exposed round" is
 * not the call's) tells them to take the call's exchange buffers instead (version 5 added "exposed round").
 *
 * <p><b>The abort mailbox</b> (version 7): an abort goes into the ring like any frame when it can. When it cannot (the
 * ring is full because its owner reads nothing, or another thread of the source holds the ring while it waits for
 * room or writes a frame in fragments) the source writes it into the next slot of the mailbox beside that ring (its
 * slots in turn), as a sequence lock (the sequence made odd, the frame written, then the sequence made even by a
 * release store), and then adds 1 to the owner's abort doorbell with an atomic add. The owner loads its doorbell each
 * time it drains its rings and, when it changed, reads every slot whose sequence is new and even, and again after
 * the frame: a changed sequence means the source wrote meanwhile, and the slot is read at the next drain. It hands
 * the aborts on only after it has drained the rings: frames a source committed before it posted come first. A
 * mailbox holds the last three aborts (one per communicator that failed: a rank's communicators share its rings).
 * A goodbye ({@code FrameDescriptor.TYPE_GOODBYE}) that its ring cannot take goes the same way.
 *
 * <p><b>The owner's lock</b> (version 6): from before it writes its file until it closes, the owner holds an
 * exclusive advisory lock ({@code fcntl}, through {@code FileChannel.tryLock}) of byte 0 of its file; a rank that
 * finds it held, by a live rank of another process or of its own, fails and leaves the file alone. A peer, or a
 * later job removing stale segments, takes the owner for gone only when it can take a shared lock of that byte:
 * the kernel drops the owner's lock when its process ends, whatever pid namespace it ran in ("owner pid" names
 * the process in messages, and is the fallback where locks cannot tell). The lock is the process's: closing any
 * channel of the owner's process on the file drops it, so that process never opens and closes one on a segment one
 * of its ranks owns (its other ranks map it through the owner's channel; ranks of one process judge each other
 * alive while they own their segments).
 */
public final class ShmSegmentDescriptor {
    public static final int MAGIC = 0x4A435348;
    public static final int VERSION = 7;

    public static final int MAGIC_OFFSET = 0;
    public static final int VERSION_OFFSET = 4;
    public static final int WORLD_SIZE_OFFSET = 8;
    public static final int OWNER_RANK_OFFSET = 12;
    public static final int RING_CAPACITY_OFFSET = 16;
    public static final int RING_STRIDE_OFFSET = 20;
    public static final int OWNER_PID_OFFSET = 24;
    public static final int JOB_ID_OFFSET = 32;
    public static final int READY_OFFSET = 40;
    public static final int ARENA_BYTES_OFFSET = 44;
    public static final int REGISTERED_BYTES_OFFSET = 48;
    public static final int AVAILABLE_PROCESSORS_OFFSET = 52;
    public static final int ALLOWED_CPUS_OFFSET = 64;
    public static final int CONTROL_OFFSET = 1024;
    /** Bytes between counters, and of a round line: one cache line each. */
    public static final int LINE = 64;
    /** Offset of the signature in a round line. */
    public static final int SIGNATURE_IN_LINE = 0;
    /** Offset of the ARRIVED stamp in a round line. */
    public static final int STAMP_IN_LINE = 48;
    /** Offset in a round line at which its half's exchange buffer starts. */
    public static final int BUFFER_IN_LINE = 56;
    public static final int HEADER_LENGTH = 4096;

    public static final int FIRST_FRAGMENT = 1;
    public static final int NEXT_FRAGMENT = 2;
    /** Record type that fills a ring's area from a record that did not fit up to its end; skipped. */
    public static final int PADDING = -1;

    /** Offset of the abort doorbell: the control block's first line, which version 6 left unused. */
    public static final int ABORT_DOORBELL_OFFSET = CONTROL_OFFSET;
    /** Aborts a ring's mailbox holds: its slots, which the source takes in turn. */
    public static final int ABORT_SLOTS = 3;
    /** Bytes of a slot of an abort mailbox. */
    public static final int ABORT_SLOT_LENGTH = 1280;
    /** Bytes of a ring's abort mailbox, after its trailer: its slots. */
    public static final int ABORT_MAILBOX_LENGTH = ABORT_SLOTS * ABORT_SLOT_LENGTH;
    public static final int ABORT_SEQUENCE_IN_SLOT = 0;
    public static final int ABORT_LENGTH_IN_SLOT = 8;
    public static final int ABORT_FRAME_IN_SLOT = 16;

    /** Bytes after a ring's records: the tail and head positions, 128 bytes each. */
    public static final int RING_TRAILER_LENGTH = 256;
    /** Offset of the tail position from the end of a ring's records. */
    public static final int RING_TAIL_OFFSET = 0;
    /** Offset of the head position from the end of a ring's records. */
    public static final int RING_HEAD_OFFSET = 128;
    /** Bytes of a record's header (length and type); records are aligned to as many bytes. */
    public static final int RECORD_HEADER_LENGTH = 8;

    private ShmSegmentDescriptor() {
    }

    /** Bytes between consecutive rings: capacity plus the trailer and the abort mailbox, rounded up to 4 KiB. */
    public static int ringStride(int capacity) {
        int raw = capacity + RING_TRAILER_LENGTH + ABORT_MAILBOX_LENGTH;
        return (raw + 4095) & ~4095;
    }

    public static long segmentLength(int worldSize, int capacity, int arenaBytes, int registeredBytes) {
        return registeredOffset(worldSize, capacity, arenaBytes) + registeredBytes;
    }

    /** Offset of the registered region: after both halves, at the next 4 KiB. */
    public static long registeredOffset(int worldSize, int capacity, int arenaBytes) {
        return arenaOffset(worldSize, capacity) + 2L * arenaBytes + 4096;
    }

    /** Offset of the round line of exchange buffer {@code half}; the buffer starts {@link #BUFFER_IN_LINE} after. */
    public static long roundLineOffset(int worldSize, int capacity, int arenaBytes, int half) {
        return arenaOffset(worldSize, capacity) + (long) half * (arenaBytes + LINE);
    }

    /** Offset of the exposed-offset word in the control block. */
    public static int exposedOffsetOffset() {
        return CONTROL_OFFSET + io.jccl.transport.SharedArena.COUNTERS * LINE;
    }

    /** Offset of the exposed-round word in the control block, after the exposed offset in the same line. */
    public static int exposedRoundOffset() {
        return exposedOffsetOffset() + 8;
    }

    /**
     * Offset of counter {@code which} in the control block (REDUCED or LEFT; ARRIVED is the round lines' stamps).
     */
    public static int counterOffset(int which) {
        if (which == io.jccl.transport.SharedArena.ARRIVED) {
            throw new IllegalArgumentException("counter ARRIVED is kept in the round lines' stamps");
        }
        return CONTROL_OFFSET + which * LINE;
    }

    /** Offset of the exchange buffers' area: half 0's round line, then its buffer, then half 1's. */
    public static long arenaOffset(int worldSize, int capacity) {
        return HEADER_LENGTH + (long) worldSize * ringStride(capacity);
    }

    public static void checkArenaBytes(int bytes) {
        if (bytes < 4096 || bytes % 4096 != 0) {
            throw new IllegalArgumentException("exchange buffer bytes must be a multiple of 4096: bytes=" + bytes);
        }
    }

    public static void checkRegisteredBytes(int bytes) {
        if (bytes < 0 || bytes % 4096 != 0) {
            throw new IllegalArgumentException("registered bytes must be a multiple of 4096: bytes=" + bytes);
        }
    }

    /** Offset of the abort mailbox of the ring from {@code source}: right after that ring's trailer. */
    public static long abortMailboxOffset(int source, int capacity) {
        return ringOffset(source, capacity) + capacity + RING_TRAILER_LENGTH;
    }

    public static long ringOffset(int source, int capacity) {
        return HEADER_LENGTH + (long) source * ringStride(capacity);
    }

    public static void checkCapacity(int capacity) {
        if (Integer.bitCount(capacity) != 1 || capacity < 4096) {
            throw new IllegalArgumentException("ring capacity must be a power of two of at least 4096: capacity="
                    + capacity);
        }
    }
}
