package io.jccl.buffer;

import io.jccl.DataType;

import java.nio.ByteBuffer;

/**
 * A typed window on a Java primitive array: what every algorithm reads and writes.
 *
 * <p>Internal: user buffers arrive as {@link io.jccl.Tensor}s; array tensors become a {@code Buf} without a copy,
 * direct buffers are staged through one (see {@link io.jccl.Tensor}).
 */
public final class Buf {
    private final DataType dtype;
    private final Object array;
    private final int offset;
    private final int count;

    public Buf(DataType dtype, Object array, int offset, int count) {
        this.dtype = dtype;
        this.array = array;
        this.offset = offset;
        this.count = count;
    }

    /** A new zeroed buffer. */
    public static Buf allocate(DataType dtype, int count) {
        return new Buf(dtype, dtype.newArray(count), 0, count);
    }

    public DataType dtype() {
        return dtype;
    }

    public Object array() {
        return array;
    }

    public int offset() {
        return offset;
    }

    public int count() {
        return count;
    }

    public long byteSize() {
        return (long) count * dtype.sizeBytes();
    }

    /** Elements {@code [from, from + n)} of this buffer, sharing storage. */
    public Buf slice(int from, int n) {
        if (from < 0 || n < 0 || from + n > count) {
            throw new IndexOutOfBoundsException("slice out of range: from=" + from + ", n=" + n + ", count=" + count);
        }
        return new Buf(dtype, array, offset + from, n);
    }

    /** Copies {@code n} elements from {@code from} of this buffer to {@code to} of {@code dst}. */
    public void copyTo(int from, Buf dst, int to, int n) {
        System.arraycopy(array, offset + from, dst.array, dst.offset + to, n);
    }

    /** Copies this whole buffer into {@code dst} starting at {@code to}. */
    public void copyTo(Buf dst, int to) {
        copyTo(0, dst, to, count);
    }

    /**
     * Writes every element into {@code dst} at its position, in {@code dst}'s byte order, and advances it by
     * {@link #byteSize()}.
     */
    public void writeTo(ByteBuffer dst) {
        switch (dtype) {
            case FLOAT32: dst.asFloatBuffer().put((float[]) array, offset, count); break;
            case FLOAT64: dst.asDoubleBuffer().put((double[]) array, offset, count); break;
            case FLOAT16:
            case BFLOAT16: dst.asShortBuffer().put((short[]) array, offset, count); break;
            case INT8:
            case UINT8: dst.duplicate().put((byte[]) array, offset, count); break;
            case INT32: dst.asIntBuffer().put((int[]) array, offset, count); break;
            case INT64: dst.asLongBuffer().put((long[]) array, offset, count); break;
            default: throw new AssertionError(dtype);
        }
        dst.position(dst.position() + (int) byteSize());
    }

    /**
     * Fills every element from {@code src} at its position, in {@code src}'s byte order, and advances it by
     * {@link #byteSize()}.
     */
    public void readFrom(ByteBuffer src) {
        switch (dtype) {
            case FLOAT32: src.asFloatBuffer().get((float[]) array, offset, count); break;
            case FLOAT64: src.asDoubleBuffer().get((double[]) array, offset, count); break;
            case FLOAT16:
            case BFLOAT16: src.asShortBuffer().get((short[]) array, offset, count); break;
            case INT8:
            case UINT8: src.duplicate().get((byte[]) array, offset, count); break;
            case INT32: src.asIntBuffer().get((int[]) array, offset, count); break;
            case INT64: src.asLongBuffer().get((long[]) array, offset, count); break;
            default: throw new AssertionError(dtype);
        }
        src.position(src.position() + (int) byteSize());
    }

    /** A fresh copy of elements {@code [from, from + n)}. */
    public Buf copyOf(int from, int n) {
        Buf copy = allocate(dtype, n);
        copyTo(from, copy, 0, n);
        return copy;
    }
}
