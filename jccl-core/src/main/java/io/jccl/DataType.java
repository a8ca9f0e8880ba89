package io.jccl;

/**
 * Element types a collective can carry, with the Java array that holds each one.
 *
 * <p>Half-precision types have no Java primitive: {@link #FLOAT16} and {@link #BFLOAT16} travel as the raw
 * 16-bit patterns in a {@code short[]}; {@link #INT8} and {@link #UINT8} share {@code byte[]} and differ only in
 * how MIN, MAX and AVG read a byte. The {@link #id()} is stable: it is what the wire header carries.
 */
public enum DataType {
    FLOAT32(0, 4, "float32", true),
    FLOAT64(1, 8, "float64", true),
    FLOAT16(2, 2, "float16", true),
    BFLOAT16(3, 2, "bfloat16", true),
    INT8(4, 1, "int8", false),
    UINT8(5, 1, "uint8", false),
    INT32(6, 4, "int32", false),
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

    /** Stable identifier carried in frame headers. */
    public int id() {
        return id;
    }

    /** Bytes per element. */
    public int sizeBytes() {
        return sizeBytes;
    }

    /** The name torch gives this type ({@code torch.float32} without the prefix). */
    public String torchName() {
        return torchName;
    }

    public boolean isFloatingPoint() {
        return floatingPoint;
    }

    /** The Java array class that holds elements of this type. */
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

    /** A new zeroed array of this type's Java array class. */
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

    public static DataType fromId(int id) {
        if (id < 0 || id >= BY_ID.length) {
            throw new IllegalArgumentException("unknown data type id: id=" + id);
        }
        return BY_ID[id];
    }

    /** Parses {@code float32}, {@code FLOAT32}, {@code bf16}, {@code fp16}, ... */
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
