package io.jccl.transport;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Byte layout of the header every jccl message carries, version 1. All fields little-endian.
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-------------------------------+---------------+---------------+
 * |         magic 0x4A43 "JC"     |    version    |  frame type   |  0
 * +---------------+---------------+---------------+---------------+
 * |   operation   |     dtype     |   reduce op   |   algorithm   |  4
 * +---------------+---------------+---------------+---------------+
 * |                          source rank                          |  8
 * +---------------------------------------------------------------+
 * |                   root (collectives) / tag (p2p)              | 12
 * +---------------------------------------------------------------+
 * |                        sequence number                        | 16
 * |                                                               |
 * +---------------------------------------------------------------+
 * |                  element count of the call                    | 24
 * |                                                               |
 * +---------------------------------------------------------------+
 * |                       step within the call                    | 32
 * +---------------------------------------------------------------+
 * |                     payload element count                     | 36
 * +---------------------------------------------------------------+
 * |          stream: communicator id << 1 | point-to-point         | 40
 * +---------------------------------------------------------------+
 * |                      reserved (zero)                          | 44
 * +---------------------------------------------------------------+
 * |                payload: payload count x dtype size            | 48
 * </pre>
 *
 * <p>Invariant: operation, dtype, reduce op, algorithm, root, sequence number and element count together are
 * the call's signature, identical on every rank of a correct program; a receiver compares them with its own call
 * before it touches the payload, so a disagreement is reported instead of reduced. {@code reduce op} and
 * {@code algorithm} are {@link #NONE} where they do not apply; {@code stream} names the ordered stream the frame
 * belongs to ({@link Streams}); an {@link #TYPE_ABORT} frame carries a UTF-8 reason
 * as a UINT8 payload.
 */
public final class FrameDescriptor {
    public static final short MAGIC = 0x4A43;
    public static final byte VERSION = 1;

    public static final int MAGIC_OFFSET = 0;
    public static final int VERSION_OFFSET = 2;
    public static final int TYPE_OFFSET = 3;
    public static final int OPERATION_OFFSET = 4;
    public static final int DTYPE_OFFSET = 5;
    public static final int REDUCE_OP_OFFSET = 6;
    public static final int ALGORITHM_OFFSET = 7;
    public static final int SOURCE_OFFSET = 8;
    public static final int ROOT_OFFSET = 12;
    public static final int SEQUENCE_OFFSET = 16;
    public static final int COUNT_OFFSET = 24;
    public static final int STEP_OFFSET = 32;
    public static final int PAYLOAD_COUNT_OFFSET = 36;
    public static final int STREAM_OFFSET = 40;
    public static final int RESERVED_OFFSET = 44;
    public static final int HEADER_LENGTH = 48;

    public static final byte TYPE_DATA = 0;
    public static final byte TYPE_ABORT = 1;
    /** The sender is closing this connection cleanly; nothing follows. */
    public static final byte TYPE_GOODBYE = 2;
    /** Value of a one-byte field that does not apply to the call. */
    public static final byte NONE = (byte) 0xFF;

    private FrameDescriptor() {
    }

    /** Writes {@code h} at the buffer's position and advances it by {@link #HEADER_LENGTH}. */
    public static void encode(FrameHeader h, ByteBuffer dst) {
        checkCapacity(dst.remaining());
        encodeAt(h, dst.slice().order(ByteOrder.LITTLE_ENDIAN), 0);
        dst.position(dst.position() + HEADER_LENGTH);
    }

    /**
     * Writes {@code h} at {@code at} of {@code dst}, a little-endian buffer, with absolute puts: no view made, the
     * buffer's position untouched (a shared-memory signature slot).
     */
    public static void encodeAt(FrameHeader h, ByteBuffer dst, int at) {
        encodeAt(h.type(), h.operation(), h.dtype(), h.reduceOp(), h.algorithm(), h.source(), h.root(), h.sequence(),
                h.count(), h.step(), h.payloadCount(), h.stream(), dst, at);
    }

    /**
     * As {@link #encodeAt(FrameHeader, ByteBuffer, int)}, from the fields themselves: what a call writes into its
     * shared-memory signature slot on every call, without making a header object.
     */
    public static void encodeAt(byte type, int operation, int dtype, int reduceOp, int algorithm, int source, int root,
                                long sequence, long count, int step, int payloadCount, int stream, ByteBuffer dst,
                                int at) {
        if (dst.order() != ByteOrder.LITTLE_ENDIAN) {
            throw new IllegalArgumentException("a frame header is little-endian");
        }
        // six little-endian longs, the fields at the offsets above (fewer stores than one per field)
        dst.putLong(at, (MAGIC & 0xFFFFL) | (VERSION & 0xFFL) << 16 | (type & 0xFFL) << 24
                | (operation & 0xFFL) << 32 | (dtype & 0xFFL) << 40 | (reduceOp & 0xFFL) << 48
                | (algorithm & 0xFFL) << 56);
        dst.putLong(at + SOURCE_OFFSET, (source & 0xFFFFFFFFL) | (long) root << 32);
        dst.putLong(at + SEQUENCE_OFFSET, sequence);
        dst.putLong(at + COUNT_OFFSET, count);
        dst.putLong(at + STEP_OFFSET, (step & 0xFFFFFFFFL) | (long) payloadCount << 32);
        dst.putLong(at + STREAM_OFFSET, stream & 0xFFFFFFFFL); // reserved (zero) in the high half
    }

    /**
     * Whether the encoded headers at {@code at} of {@code a} and {@code bt} of {@code b} (little-endian buffers)
     * agree in their raw bytes on every field but the source (bytes 8-11): the same call, compared in six loads a
     * side. False does not say which field differs; decode both for that.
     */
    public static boolean sameCall(ByteBuffer a, int at, ByteBuffer b, int bt) {
        return a.getLong(at) == b.getLong(bt)
                && a.getInt(at + ROOT_OFFSET) == b.getInt(bt + ROOT_OFFSET)
                && a.getLong(at + SEQUENCE_OFFSET) == b.getLong(bt + SEQUENCE_OFFSET)
                && a.getLong(at + COUNT_OFFSET) == b.getLong(bt + COUNT_OFFSET)
                && a.getLong(at + STEP_OFFSET) == b.getLong(bt + STEP_OFFSET)
                && a.getLong(at + STREAM_OFFSET) == b.getLong(bt + STREAM_OFFSET);
    }

    public static byte[] encode(FrameHeader h) {
        byte[] bytes = new byte[HEADER_LENGTH];
        encode(h, ByteBuffer.wrap(bytes));
        return bytes;
    }

    /**
     * Reads a header at the buffer's position and advances it.
     *
     * @throws FrameFormatException on a wrong magic or version, or a negative payload count
     */
    public static FrameHeader decode(ByteBuffer src) {
        checkCapacity(src.remaining());
        ByteBuffer b = src.slice().order(ByteOrder.LITTLE_ENDIAN);
        short magic = b.getShort(MAGIC_OFFSET);
        if (magic != MAGIC) {
            throw new FrameFormatException("bad frame magic: expected=0x" + Integer.toHexString(MAGIC)
                    + ", actual=0x" + Integer.toHexString(magic & 0xFFFF));
        }
        byte version = b.get(VERSION_OFFSET);
        if (version != VERSION) {
            throw new FrameFormatException("unsupported frame version: expected=" + VERSION + ", actual=" + version);
        }
        int payloadCount = b.getInt(PAYLOAD_COUNT_OFFSET);
        if (payloadCount < 0) {
            throw new FrameFormatException("negative payload count: payloadCount=" + payloadCount);
        }
        FrameHeader h = new FrameHeader(b.get(TYPE_OFFSET), b.get(OPERATION_OFFSET) & 0xFF,
                b.get(DTYPE_OFFSET) & 0xFF, b.get(REDUCE_OP_OFFSET) & 0xFF, b.get(ALGORITHM_OFFSET) & 0xFF,
                b.getInt(SOURCE_OFFSET), b.getInt(ROOT_OFFSET), b.getLong(SEQUENCE_OFFSET),
                b.getLong(COUNT_OFFSET), b.getInt(STEP_OFFSET), payloadCount, b.getInt(STREAM_OFFSET));
        src.position(src.position() + HEADER_LENGTH);
        return h;
    }

    /**
     * The header encoded at {@code at} of {@code src} (its position untouched), or null when none is there (a wrong
     * magic or version: a shared-memory signature slot never written, or being rewritten).
     */
    public static FrameHeader decodeAtOrNull(ByteBuffer src, int at) {
        ByteBuffer w = src.duplicate();
        w.limit(at + HEADER_LENGTH).position(at);
        try {
            return decode(w);
        } catch (FrameFormatException e) {
            return null;
        }
    }

    public static FrameHeader decode(byte[] bytes) {
        return decode(ByteBuffer.wrap(bytes));
    }

    private static void checkCapacity(int capacity) {
        if (capacity < HEADER_LENGTH) {
            throw new FrameFormatException("insufficient capacity for a frame header: minCapacity=" + HEADER_LENGTH
                    + ", capacity=" + capacity);
        }
    }
}
