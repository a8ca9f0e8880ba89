package io.jccl.buffer;

import io.jccl.DataType;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A typed window on a Java primitive array or on a direct byte buffer: what every algorithm reads and writes.
 *
 * <p>Internal: user buffers arrive as {@link io.jccl.Tensor}s. Array tensors become a {@code Buf} without a copy.
 * Direct buffers become one without a copy on transports with no shared arena (TCP: {@link #over}), so that a send
 * writes the socket straight from them and a receive reads it straight into them; elsewhere they are staged
 * through an array (see {@link io.jccl.Tensor}). Every operation here serves both kinds, in any pairing; only
 * {@link #array()} is the array kind's alone.
 */
public final class Buf {
    private final DataType dtype;
    /** The elements, or null over memory. */
    private final Object array;
    /** Over memory: element 0 at byte 0, in this buffer's byte order; null over an array. */
    private final ByteBuffer memory;
    private final int offset;
    private final int count;

    public Buf(DataType dtype, Object array, int offset, int count) {
        this(dtype, array, null, offset, count);
    }

    private Buf(DataType dtype, Object array, ByteBuffer memory, int offset, int count) {
        this.dtype = dtype;
        this.array = array;
        this.memory = memory;
        this.offset = offset;
        this.count = count;
    }

    /**
     * Elements {@code [offset, offset + count)} of {@code memory}, read and written in its byte order: element 0 at
     * its byte 0 (its position and limit are ignored; it must hold them all).
     */
    public static Buf over(DataType dtype, ByteBuffer memory, int offset, int count) {
        if ((long) (offset + count) * dtype.sizeBytes() > memory.capacity()) {
            throw new IndexOutOfBoundsException("memory of " + memory.capacity() + " bytes has no room for elements "
                    + offset + ".." + (offset + count) + " of " + dtype);
        }
        return new Buf(dtype, null, memory, offset, count);
    }

    /** A new zeroed buffer. */
    public static Buf allocate(DataType dtype, int count) {
        return new Buf(dtype, dtype.newArray(count), 0, count);
    }

    public DataType dtype() {
        return dtype;
    }

    /** Whether the elements are in a byte buffer ({@link #over}) rather than an array. */
    public boolean isMemory() {
        return memory != null;
    }

    /**
     * Whether this buffer is memory whose bytes are in the wire's order (little-endian, as every frame payload is):
     * a socket can write from it and read into it as it is, with no conversion and no copy.
     */
    public boolean isWireOrderMemory() {
        return memory != null && memory.order() == ByteOrder.LITTLE_ENDIAN;
    }

    /**
     * The array behind this buffer.
     *
     * @throws IllegalStateException over memory, which has none
     */
    public Object array() {
        if (array == null) {
            throw new IllegalStateException("a buffer over memory has no array");
        }
        return array;
    }

    /** The memory behind this buffer (whole, as it was given to {@link #over}), or null for an array. */
    public ByteBuffer memory() {
        return memory;
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

    /** The byte order of the elements: the memory's, native for an array. */
    public ByteOrder order() {
        return memory != null ? memory.order() : ByteOrder.nativeOrder();
    }

    /**
     * Over memory: this buffer's bytes as a new buffer in its byte order, position 0, limit {@link #byteSize()}
     * (the caller may move them; the elements are shared).
     */
    public ByteBuffer bytes() {
        return window(0, count);
    }

    private ByteBuffer window(int from, int n) {
        int size = dtype.sizeBytes();
        ByteBuffer w = memory.duplicate();
        w.limit((offset + from + n) * size).position((offset + from) * size);
        return w.slice().order(memory.order());
    }

    /** Throws unless elements {@code [from, from + n)} lie within this buffer. */
    public void checkRange(int from, int n) {
        if (from < 0 || n < 0 || from + n > count) {
            throw new IndexOutOfBoundsException("out of range: from=" + from + ", n=" + n + ", count=" + count);
        }
    }

    /** Elements {@code [from, from + n)} of this buffer, sharing storage. */
    public Buf slice(int from, int n) {
        checkRange(from, n);
        return new Buf(dtype, array, memory, offset + from, n);
    }

    /** Copies {@code n} elements from {@code from} of this buffer to {@code to} of {@code dst}. */
    public void copyTo(int from, Buf dst, int to, int n) {
        if (memory == null && dst.memory == null) {
            System.arraycopy(array, offset + from, dst.array, dst.offset + to, n);
        } else if (memory == null) {
            new Buf(dtype, array, offset + from, n).writeTo(dst.window(to, n));
        } else {
            slice(from, n).writeTo(dst.memory == null ? null : dst.window(to, n), dst, to);
        }
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
        if (memory != null) {
            writeTo(dst, null, 0);
            return;
        }
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
     * Over memory: the elements into {@code dst} (bytes at its position, advanced), or, when it is null, into the
     * array buffer {@code arrayDst} at {@code to}.
     */
    private void writeTo(ByteBuffer dst, Buf arrayDst, int to) {
        ByteBuffer src = bytes();
        if (dst == null) {
            new Buf(dtype, arrayDst.array, arrayDst.offset + to, count).readFrom(src);
        } else if (src.order() == dst.order() || dtype.sizeBytes() == 1) {
            dst.put(src);
        } else { // byte orders differ: element by element through an array
            Buf a = allocate(dtype, count);
            a.readFrom(src);
            a.writeTo(dst);
        }
    }

    /**
     * Fills every element from {@code src} at its position, in {@code src}'s byte order, and advances it by
     * {@link #byteSize()}.
     */
    public void readFrom(ByteBuffer src) {
        if (memory != null) {
            ByteBuffer from = src.duplicate().order(src.order());
            from.limit(from.position() + (int) byteSize());
            if (from.order() == memory.order() || dtype.sizeBytes() == 1) {
                bytes().put(from);
            } else {
                Buf a = allocate(dtype, count);
                a.readFrom(from);
                a.writeTo(bytes());
            }
            src.position(src.position() + (int) byteSize());
            return;
        }
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

    /** A fresh copy of elements {@code [from, from + n)}, in an array. */
    public Buf copyOf(int from, int n) {
        Buf copy = allocate(dtype, n);
        copyTo(from, copy, 0, n);
        return copy;
    }
}
