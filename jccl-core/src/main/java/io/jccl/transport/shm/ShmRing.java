package io.jccl.transport.shm;

import io.jccl.transport.FrameFormatException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static io.jccl.transport.shm.ShmSegmentDescriptor.PADDING;
import static io.jccl.transport.shm.ShmSegmentDescriptor.RECORD_HEADER_LENGTH;
import static io.jccl.transport.shm.ShmSegmentDescriptor.RING_HEAD_OFFSET;
import static io.jccl.transport.shm.ShmSegmentDescriptor.RING_TAIL_OFFSET;
import static io.jccl.transport.shm.ShmSegmentDescriptor.RING_TRAILER_LENGTH;

/**
 * One end of a single-producer single-consumer ring of records in a slice of a mapped segment, laid out as
 * {@link ShmSegmentDescriptor} describes. The producer claims a record ({@link #tryClaim}), writes its message
 * and publishes it ({@link #commit}); the consumer reads every published record ({@link #read}). Positions are
 * read and written through a {@link VarHandle} view of the buffer (release stores, acquire loads), messages with
 * bulk {@link ByteBuffer} copies: no raw addresses, so a ring whose transport was closed stays memory-safe.
 *
 * <p>Not thread-safe: one thread at a time produces (the transport's send lock), one consumes (its drain lock).
 */
final class ShmRing {
    private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class,
            ByteOrder.nativeOrder());
    private static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

    /** Receives the messages of {@link #read}: a little-endian buffer from the message's first byte to its last. */
    interface Handler {
        void onMessage(int type, ByteBuffer message);
    }

    private final ByteBuffer buffer;
    private final int capacity;
    private final int mask;
    private final int maxMessageLength;
    private final int tailAt;
    private final int headAt;
    /** Producer: the position up to which records are published; consumer: the position read up to. */
    private long position;
    /** Producer: the head last read, a lower bound of the real one (saves reading the consumer's line). */
    private long headCache;
    /** Producer: the position after the claimed record, published by {@link #commit}; -1 when none is claimed. */
    private long claimedEnd = -1;

    /** The ring at {@code offset} of {@code segment}, with {@code capacity} bytes of records. */
    ShmRing(ByteBuffer segment, long offset, int capacity) {
        ShmSegmentDescriptor.checkCapacity(capacity);
        this.buffer = segment.slice(Math.toIntExact(offset), capacity + RING_TRAILER_LENGTH)
                .order(ByteOrder.nativeOrder());
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.maxMessageLength = capacity >> 3;
        this.tailAt = capacity + RING_TAIL_OFFSET;
        this.headAt = capacity + RING_HEAD_OFFSET;
        // one end is made per side and per ring, before any record: both positions start where the ring is
        this.position = (long) LONGS.getAcquire(buffer, tailAt);
        this.headCache = (long) LONGS.getAcquire(buffer, headAt);
    }

    /** The consumer's end of the ring: it reads from the published head. */
    static ShmRing consumer(ByteBuffer segment, long offset, int capacity) {
        ShmRing r = new ShmRing(segment, offset, capacity);
        r.position = r.headCache;
        return r;
    }

    /** The producer's end of the ring: it writes from the published tail. */
    static ShmRing producer(ByteBuffer segment, long offset, int capacity) {
        return new ShmRing(segment, offset, capacity);
    }

    int capacity() {
        return capacity;
    }

    /** The longest message a record holds: an eighth of the capacity. */
    int maxMessageLength() {
        return maxMessageLength;
    }

    /** {@code length} bytes of the ring's records from {@code index}, as a little-endian buffer positioned there. */
    ByteBuffer message(int index, int length) {
        ByteBuffer b = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        b.limit(index + length).position(index);
        return b;
    }

    private static int aligned(int recordLength) {
        return (recordLength + RECORD_HEADER_LENGTH - 1) & -RECORD_HEADER_LENGTH;
    }

    /**
     * Claims a record for a message of {@code length} bytes of {@code type}; returns the index of the message in the
     * ring's buffer ({@link #message}), or -1 when the ring has no room for it now. The record is invisible to the
     * consumer until {@link #commit()}.
     *
     * @throws IllegalArgumentException if {@code length} is over {@link #maxMessageLength()} or the type is not
     *                                  positive
     */
    int tryClaim(int type, int length) {
        if (type < 1) {
            throw new IllegalArgumentException("record type must be positive: " + type);
        }
        if (length < 0 || length > maxMessageLength) {
            throw new IllegalArgumentException("message of " + length + " bytes is over the ring's maximum of "
                    + maxMessageLength);
        }
        int recordLength = RECORD_HEADER_LENGTH + length;
        int required = aligned(recordLength);
        long tail = position;
        int index = (int) (tail & mask);
        int toEnd = capacity - index;
        int padding = required > toEnd ? toEnd : 0;
        if (!hasRoom(tail, padding + required)) {
            return -1;
        }
        if (padding > 0) {
            INTS.set(buffer, index + 4, PADDING);
            INTS.set(buffer, index, padding);
            index = 0;
        }
        INTS.set(buffer, index + 4, type);
        INTS.set(buffer, index, recordLength);
        claimedEnd = tail + padding + required;
        return index + RECORD_HEADER_LENGTH;
    }

    private boolean hasRoom(long tail, int bytes) {
        if (tail + bytes - headCache <= capacity) {
            return true;
        }
        long head = (long) LONGS.getAcquire(buffer, headAt);
        if (head - headCache < 0 || tail - head < 0) {
            return false; // a head that went back, or ahead of the tail: not a consumer of this ring
        }
        headCache = head;
        return tail + bytes - head <= capacity;
    }

    /** Publishes the record claimed last (and the padding before it, if any) to the consumer. */
    void commit() {
        if (claimedEnd < 0) {
            throw new IllegalStateException("no record is claimed");
        }
        position = claimedEnd;
        claimedEnd = -1;
        LONGS.setRelease(buffer, tailAt, position);
    }

    /**
     * Hands every record published so far to {@code handler}, in order, skipping padding, then gives their space
     * back to the producer; returns the number of messages read.
     *
     * @throws FrameFormatException if the ring's positions or a record's header are impossible (a corrupt ring:
     *                              the records read before it are still handed over and released)
     */
    int read(Handler handler) {
        long tail = (long) LONGS.getAcquire(buffer, tailAt);
        long head = position;
        long available = tail - head;
        if (available == 0) {
            return 0;
        }
        if (available < 0 || available > capacity) {
            throw new FrameFormatException("impossible ring positions: head " + head + ", tail " + tail);
        }
        int messages = 0;
        try {
            while (head < tail) {
                int index = (int) (head & mask);
                int recordLength = (int) INTS.get(buffer, index);
                int type = (int) INTS.get(buffer, index + 4);
                int span = aligned(recordLength);
                if (recordLength < RECORD_HEADER_LENGTH || span > capacity - index || span > tail - head
                        || (type != PADDING && recordLength - RECORD_HEADER_LENGTH > maxMessageLength)) {
                    throw new FrameFormatException("impossible record at ring index " + index + ": length "
                            + recordLength + ", type " + type);
                }
                head += span;
                if (type != PADDING) {
                    messages++;
                    handler.onMessage(type, message(index + RECORD_HEADER_LENGTH, recordLength - RECORD_HEADER_LENGTH));
                }
            }
        } finally {
            position = head;
            LONGS.setRelease(buffer, headAt, head);
        }
        return messages;
    }
}
