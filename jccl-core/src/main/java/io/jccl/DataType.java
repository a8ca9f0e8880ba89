package io.jccl;

/**
 * Element types a collective can carry, with the Java array that holds each one.
 *
 * <p>Half-precision types have no Java primitive: {@link #FLOAT16} and {@link #BFLOAT16} travel as the raw
 * 16-bit patterns in a {@code short[]}; {@link #INT8} and {@link #UINT8} share {@code byte[]} and differ only in
 * how MIN, MAX and AVG read a byte. The {@link #id()} is stable: it is what the wire header carries.
 */
public enum DataType {
    /** IEEE 754 single precision, in a {@code float[]} ({@code torch.float32}). */
    FLOAT32(0, 4, "float32", true),
    /** IEEE 754 double precision, in a {@code double[]} ({@code torch.float64}). */
    FLOAT64(1, 8, "float64", true),
    /**
     * IEEE 754 half precision, the bit patterns in a {@code short[]} ({@code torch.float16}); reductions widen to
     * float and round back to nearest even.
     */
    FLOAT16(2, 2, "float16", true),
    /**
     * bfloat16 (the upper half of a float32), the bit patterns in a {@code short[]} ({@code torch.bfloat16});
     * reductions widen to float and round back to nearest even.
     */
    BFLOAT16(3, 2, "bfloat16", true),
    /** Signed 8-bit integers, in a {@code byte[]} ({@code torch.int8}). */
    INT8(4, 1, "int8", false),
    /** Unsigned 8-bit integers, in a {@code byte[]} read as 0..255 ({@code torch.uint8}). */
    UINT8(5, 1, "uint8", false),
    /** Signed 32-bit integers, in an {@code int[]} ({@code torch.int32}). */
    INT32(6, 4, "int32", false),
    /** Signed 64-bit integers, in a {@code long[]} ({@code torch.int64}). */
    INT64(7, 8, "int64", false);

    private static final DataType[] BY_ID = values();

    private final int id;
    private final int sizeBytes;
    private final String torchName;
    private final boolean floatingPoint;

    DataType(int id, int sizeBytes, String torchName, boolean floatingPoint) {
        this.id = id;
        this.sizeBytes = sizeBytes;
        this.torchName = torchName;
        this.floatingPoint = floatingPoint;
    }

    /**
     * Stable identifier carried in frame headers.
     *
     * @return the id, from 0 up in declaration order
     */
    public int id() {
        return id;
    }

    /**
     * Bytes per element.
     *
     * @return 1, 2, 4 or 8
     */
    public int sizeBytes() {
        return sizeBytes;
    }

    /**
     * The name torch gives this type ({@code torch.float32} without the prefix).
     *
     * @return {@code float32}, {@code bfloat16}, ...
     */
    public String torchName() {
        return torchName;
    }

    /**
     * Whether this is a floating-point type (the bitwise operators are not defined for these).
     *
     * @return true for FLOAT32, FLOAT64, FLOAT16 and BFLOAT16
     */
    public boolean isFloatingPoint() {
        return floatingPoint;
    }

    /**
     * The Java array class that holds elements of this type.
     *
     * @return {@code float[].class}, {@code short[].class} for the half types, ...
     */
    public Class<?> arrayClass() {
        switch (this) {
            case FLOAT32: return float[].class;
            case FLOAT64: return double[].class;
            case FLOAT16:
            case BFLOAT16: return short[].class;
            case INT8:
            case UINT8: return byte[].class;
            case INT32: return int[].class;
            case INT64: return long[].class;
            default: throw new AssertionError(this);
        }
    }

    /**
     * A new zeroed array of this type's Java array class.
     *
     * @param length the number of elements
     * @return a new array of {@link #arrayClass()}
     */
    public Object newArray(int length) {
        switch (this) {
            case FLOAT32: return new float[length];
            case FLOAT64: return new double[length];
            case FLOAT16:
            case BFLOAT16: return new short[length];
            case INT8:
            case UINT8: return new byte[length];
            case INT32: return new int[length];
            case INT64: return new long[length];
            default: throw new AssertionError(this);
        }
    }

    /**
     * The type with this {@link #id()}, as read from a frame header.
     *
     * @param id a data type id
     * @return the type
     * @throws IllegalArgumentException if no type has this id
     */
    public static DataType fromId(int id) {
        if (id < 0 || id >= BY_ID.length) {
            throw new IllegalArgumentException("unknown data type id: id=" + id);
        }
        return BY_ID[id];
    }

    /**
     * Parses a torch name in any case ({@code float32}, {@code FLOAT32}) or an alias: {@code float}, {@code fp32},
     * {@code double}, {@code fp64}, {@code half}, {@code fp16}, {@code bf16}, {@code int}, {@code long}.
     *
     * @param name the name, surrounding blanks ignored
     * @return the type
     * @throws IllegalArgumentException if the name is no type's; the message lists the valid names
     */
    public static DataType parse(String name) {
        String n = name.trim().toLowerCase(java.util.Locale.ROOT);
        switch (n) {
            case "float": case "fp32": return FLOAT32;
            case "double": case "fp64": return FLOAT64;
            case "half": case "fp16": return FLOAT16;
            case "bf16": return BFLOAT16;
            case "int": return INT32;
            case "long": return INT64;
            default: break;
        }
        for (DataType t : values()) {
            if (t.torchName.equals(n)) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown data type: '" + name + "', expected one of float32, float64, "
                + "float16, bfloat16, int8, uint8, int32, int64");
    }
}
