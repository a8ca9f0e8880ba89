package io.jccl;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * A buffer handed to a collective: a range of a Java primitive array, or a direct {@link ByteBuffer}.
 *
 * <p>Array tensors are read and written in place. A {@link ByteBuffer} (direct or heap) is read from its position
 * to its limit in the buffer's own {@link ByteBuffer#order() byte order}, as {@code getFloat}/{@code putFloat}
 * would. Over TCP (a transport with no shared arena) a direct buffer is worked on in place: sent from and received
 * into as it is. Elsewhere a collective copies it into a Java array, runs, and copies the result back (one copy each
 * way), except a buffer from {@link Communicator#allocate}, which peers on shared memory read in place. Half-precision types travel as raw bits in a {@code short[]}; {@code byte[]} carries INT8 or UINT8.
 */
public final class Tensor {
    private final DataType dtype;
    private final Object array;
    private final int offset;
    private final int count;
    private final ByteBuffer buffer;
    /** The buffer object the caller gave ({@link #overlaps} compares it by identity), or null for an array. */
    private final ByteBuffer source;
    private final ByteOrder order;

    private Tensor(DataType dtype, Object array, int offset, int count, ByteBuffer buffer, ByteBuffer source,
                   ByteOrder order) {
        this.dtype = dtype;
        this.array = array;
        this.offset = offset;
        this.count = count;
        this.buffer = buffer;
        this.source = source;
        this.order = order;
    }

    /**
     * The whole array, as {@link DataType#FLOAT32}.
     *
     * @param data the elements, read and written in place
     * @return a tensor over {@code data}
     * @throws IllegalArgumentException if {@code data} is null
     */
    public static Tensor of(float[] data) {
        return ofArray(DataType.FLOAT32, data, 0, checkedLength(data, float[].class));
    }

    /**
     * A range of the array, as {@link DataType#FLOAT32}.
     *
     * @param data the array, read and written in place
     * @param offset the index of the first element
     * @param count the number of elements
     * @return a tensor over {@code data[offset .. offset + count)}
     * @throws IllegalArgumentException if {@code data} is null or the range is outside it
     */
    public static Tensor of(float[] data, int offset, int count) {
        return ofArray(DataType.FLOAT32, data, offset, count);
    }

    /**
     * The whole array, as {@link DataType#FLOAT64}.
     *
     * @param data the elements, read and written in place
     * @return a tensor over {@code data}
     * @throws IllegalArgumentException if {@code data} is null
     */
    public static Tensor of(double[] data) {
        return ofArray(DataType.FLOAT64, data, 0, checkedLength(data, double[].class));
    }

    /**
     * A range of the array, as {@link DataType#FLOAT64}.
     *
     * @param data the array, read and written in place
     * @param offset the index of the first element
     * @param count the number of elements
     * @return a tensor over {@code data[offset .. offset + count)}
     * @throws IllegalArgumentException if {@code data} is null or the range is outside it
     */
    public static Tensor of(double[] data, int offset, int count) {
        return ofArray(DataType.FLOAT64, data, offset, count);
    }

    /**
     * The whole array, as {@link DataType#INT32}.
     *
     * @param data the elements, read and written in place
     * @return a tensor over {@code data}
     * @throws IllegalArgumentException if {@code data} is null
     */
    public static Tensor of(int[] data) {
        return ofArray(DataType.INT32, data, 0, checkedLength(data, int[].class));
    }

    /**
     * The whole array, as {@link DataType#INT64}.
     *
     * @param data the elements, read and written in place
     * @return a tensor over {@code data}
     * @throws IllegalArgumentException if {@code data} is null
     */
    public static Tensor of(long[] data) {
        return ofArray(DataType.INT64, data, 0, checkedLength(data, long[].class));
    }

    /**
     * A {@code byte[]} as INT8 or UINT8.
     *
     * @param data the elements, read and written in place
     * @param dtype {@link DataType#INT8} or {@link DataType#UINT8}
     * @return a tensor over {@code data}
     * @throws IllegalArgumentException if {@code data} is null or {@code dtype} is not held in a {@code byte[]}
     */
    public static Tensor of(byte[] data, DataType dtype) {
        return ofArray(dtype, data, 0, checkedLength(data, byte[].class));
    }

    /**
     * A {@code short[]} holding FLOAT16 or BFLOAT16 bit patterns.
     *
     * @param data the bit patterns, read and written in place
     * @param dtype {@link DataType#FLOAT16} or {@link DataType#BFLOAT16}
     * @return a tensor over {@code data}
     * @throws IllegalArgumentException if {@code data} is null or {@code dtype} is not held in a {@code short[]}
     */
    public static Tensor of(short[] data, DataType dtype) {
        return ofArray(dtype, data, 0, checkedLength(data, short[].class));
    }

    /**
     * Any primitive array range whose class matches {@link DataType#arrayClass()}.
     *
     * @param dtype the element type
     * @param array a {@code dtype.arrayClass()} array, read and written in place
     * @param offset the index of the first element
     * @param count the number of elements
     * @return a tensor over {@code count} elements of {@code array} from {@code offset}
     * @throws IllegalArgumentException if the array is null, of the wrong class, or the range is outside it
     */
    public static Tensor ofArray(DataType dtype, Object array, int offset, int count) {
        Objects.requireNonNull(dtype, "dtype");
        if (array == null) {
            throw new IllegalArgumentException("tensor array is null");
        }
        if (array.getClass() != dtype.arrayClass()) {
            throw new IllegalArgumentException("dtype " + dtype + " needs a " + dtype.arrayClass().getSimpleName()
                    + ", got a " + array.getClass().getSimpleName());
        }
        int length = java.lang.reflect.Array.getLength(array);
        if (offset < 0 || count < 0 || (long) offset + count > length) {
            throw new IllegalArgumentException("tensor range out of bounds: offset=" + offset + ", count=" + count
                    + ", array length=" + length);
        }
        return new Tensor(dtype, array, offset, count, null, null, ByteOrder.nativeOrder());
    }

    /**
     * A byte buffer (direct or heap) from its position to its limit, read and written in the buffer's byte order
     * at the time of this call: a buffer filled with {@code putFloat} in the default big-endian order reads back
     * the same floats. A native-order direct buffer is the fastest (no byte swapping).
     *
     * @param buffer the bytes from its position to its limit (the tensor keeps a duplicate: moving the buffer's
     *        position later does not change the tensor)
     * @param dtype the element type
     * @return a tensor of {@code buffer.remaining() / dtype.sizeBytes()} elements
     * @throws IllegalArgumentException if the buffer is null, read-only, or its remaining bytes are not a whole
     *                                  number of elements
     */
    public static Tensor of(ByteBuffer buffer, DataType dtype) {
        Objects.requireNonNull(dtype, "dtype");
        if (buffer == null) {
            throw new IllegalArgumentException("tensor buffer is null");
        }
        if (buffer.isReadOnly()) {
            throw new IllegalArgumentException("tensor buffer is read-only");
        }
        if (buffer.remaining() % dtype.sizeBytes() != 0) {
            throw new IllegalArgumentException("buffer holds " + buffer.remaining() + " bytes, not a multiple of "
                    + dtype + "'s " + dtype.sizeBytes() + " bytes");
        }
        return new Tensor(dtype, null, 0, buffer.remaining() / dtype.sizeBytes(), buffer.duplicate(), buffer,
                buffer.order());
    }

    private static int checkedLength(Object array, Class<?> cls) {
        if (array == null) {
            throw new IllegalArgumentException("tensor array is null");
        }
        return java.lang.reflect.Array.getLength(cls.cast(array));
    }

    /**
     * The element type.
     *
     * @return the type of every element
     */
    public DataType dtype() {
        return dtype;
    }

    /**
     * Number of elements.
     *
     * @return 0 or more
     */
    public int count() {
        return count;
    }

    /**
     * The size of the elements in bytes.
     *
     * @return {@link #count()} times the element size
     */
    public long byteSize() {
        return (long) count * dtype.sizeBytes();
    }

    /**
     * The byte buffer behind this tensor (a duplicate: position, limit and byte order as given), or null for an
     * array.
     *
     * @return a new duplicate of the buffer, or null
     */
    public ByteBuffer byteBuffer() {
        return buffer == null ? null : buffer.duplicate().order(order);
    }

    /**
     * The byte order the elements are read and written in: the buffer's, or native for an array.
     *
     * @return the byte order
     */
    public ByteOrder byteOrder() {
        return order;
    }

    /**
     * Whether this tensor is backed by a byte buffer (and so is staged through an array).
     *
     * @return true for a buffer tensor, false for an array tensor
     */
    public boolean isBuffer() {
        return buffer != null;
    }

    /**
     * The array behind this tensor (read and written in place by collectives), or null for a buffer tensor.
     *
     * @return the array itself, not a copy, or null
     */
    public Object array() {
        return array;
    }

    /**
     * The index in {@link #array()} of this tensor's first element (0 for a buffer tensor).
     *
     * @return the offset
     */
    public int offset() {
        return offset;
    }

    /**
     * Whether this tensor and {@code other} share elements: the same array, or the same byte buffer object (as given
     * to {@link #of(ByteBuffer, DataType)}, at intersecting ranges of its bytes). Two different buffer objects are
     * taken to be apart, even when they are views of one memory (Java 17 cannot compare their addresses): pass the
     * same object, or the same tensor, to know. The collectives copy their input first where {@link #mayOverlap}
     * holds, which takes two such buffers to share memory.
     *
     * @param other another tensor
     * @return true when they share elements
     */
    public boolean overlaps(Tensor other) {
        if (count == 0 || other.count == 0) {
            return false;
        }
        if (source != other.source) { // different buffer objects, or a buffer and an array
            return false;
        }
        if (source != null) { // one buffer object: each tensor from its position in it, in bytes
            int at = buffer.position();
            int otherAt = other.buffer.position();
            return at < otherAt + other.byteSize() && otherAt < at + byteSize();
        }
        return array == other.array && offset < other.offset + other.count && other.offset < offset + count;
    }

    /**
     * Whether this tensor and {@code other} may share memory: they {@link #overlaps overlap}, or they are views of
     * direct memory given as different buffer objects (Java 17 cannot compare their addresses, so they may be one
     * memory), or heap buffers over one array at intersecting ranges. The collectives that would read input the
     * output has overwritten copy their input first where this holds.
     *
     * @param other another tensor
     * @return false only when they are known to be apart
     */
    public boolean mayOverlap(Tensor other) {
        if (overlaps(other)) {
            return true;
        }
        if (count == 0 || other.count == 0 || source == null || other.source == null || source == other.source) {
            return false; // arrays are compared exactly, as is one buffer object
        }
        if (source.isDirect() && other.source.isDirect()) {
            return true;
        }
        if (source.hasArray() && other.source.hasArray() && source.array() == other.source.array()) {
            int at = source.arrayOffset() + buffer.position();
            int otherAt = other.source.arrayOffset() + other.buffer.position();
            return at < otherAt + other.byteSize() && otherAt < at + byteSize();
        }
        return false;
    }

    /**
     * Whether this tensor is known to be exactly block {@code r} of {@code whole} (blocks of this tensor's count, from
     * the start of {@code whole}): the same array, or the same buffer object, at that place. NCCL's in-place
     * allgather passes its input so, and its in-place reduce_scatter its output.
     *
     * @param whole the tensor of all blocks
     * @param r the block's index
     * @return true when it is known to be that block
     */
    public boolean isBlockOf(Tensor whole, int r) {
        if (dtype != whole.dtype) {
            return false;
        }
        if (source == null) {
            return array != null && array == whole.array && offset == whole.offset + (long) r * count;
        }
        return source == whole.source && buffer.position() == whole.buffer.position() + (long) r * byteSize();
    }

    /** How many elements {@link #toString} shows. */
    private static final int SHOWN = 8;

    /**
     * The dtype, the count, where the elements live and the first {@value #SHOWN} of them, e.g.
     * {@code Tensor[FLOAT32 x 4, float[4] at 0: 1.0, 2.0, 3.0, 4.0]}.
     */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("Tensor[").append(dtype).append(" x ").append(count);
        if (buffer == null) {
            b.append(", ").append(array.getClass().getComponentType().getSimpleName()).append('[')
                    .append(java.lang.reflect.Array.getLength(array)).append("] at ").append(offset);
        } else {
            b.append(buffer.isDirect() ? ", direct buffer, " : ", heap buffer, ").append(order);
        }
        int shown = Math.min(count, SHOWN);
        for (int i = 0; i < shown; i++) {
            b.append(i == 0 ? ": " : ", ").append(element(i));
        }
        return b.append(count > shown ? ", ...]" : "]").toString();
    }

    /** A 16-bit float's bits, as {@code 0x3c00}. */
    private static String bits(short v) {
        return String.format("0x%04x", v & 0xFFFF);
    }

    /** Element {@code i} as text: a number (uint8 unsigned; 16-bit floats as their bits, e.g. {@code 0x3c00}). */
    private String element(int i) {
        if (buffer != null) {
            ByteBuffer v = buffer.duplicate().order(order);
            int at = buffer.position() + i * dtype.sizeBytes();
            switch (dtype) {
                case FLOAT32: return Float.toString(v.getFloat(at));
                case FLOAT64: return Double.toString(v.getDouble(at));
                case INT32: return Integer.toString(v.getInt(at));
                case INT64: return Long.toString(v.getLong(at));
                case FLOAT16:
                case BFLOAT16: return bits(v.getShort(at));
                case UINT8: return Integer.toString(v.get(at) & 0xFF);
                default: return Byte.toString(v.get(at));
            }
        }
        Object e = java.lang.reflect.Array.get(array, offset + i);
        switch (dtype) {
            case FLOAT16:
            case BFLOAT16: return bits((Short) e);
            case UINT8: return Integer.toString((Byte) e & 0xFF);
            default: return e.toString();
        }
    }
}
