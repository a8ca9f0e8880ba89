package io.jccl;

/**
 * Reduction operators, with torch.distributed's semantics.
 *
 * <p>{@link #AVG} is SUM followed by division by the world size in the element type (floating types round the
 * quotient once; integer types truncate toward zero, as NCCL does; the sum wraps first, so an 8-bit AVG of 200 and
 * 200 is 72; torch's gloo refuses AVG). The bitwise operators apply only to integer
 * types. The {@link #id()} is stable: it is what the wire header carries.
 */
public enum ReduceOp {
    /** The sum; integer types wrap on overflow. */
    SUM(0),
    /** The product; integer types wrap on overflow. */
    PRODUCT(1),
    /** The minimum ({@link DataType#UINT8} compares unsigned); a NaN keeps the value accumulated so far. */
    MIN(2),
    /** The maximum ({@link DataType#UINT8} compares unsigned); a NaN keeps the value accumulated so far. */
    MAX(3),
    /** The mean: SUM, then divided by the world size in the element type (integers truncate toward zero). */
    AVG(4),
    /** Bitwise AND; integer types only. */
    BAND(5),
    /** Bitwise OR; integer types only. */
    BOR(6),
    /** Bitwise exclusive OR; integer types only. */
    BXOR(7);

    private static final ReduceOp[] BY_ID = values();

    private final int id;

    ReduceOp(int id) {
        this.id = id;
    }

    /**
     * The stable number of this operator, as the wire header carries it.
     *
     * @return the id, from 0 up in declaration order
     */
    public int id() {
        return id;
    }

    /**
     * Whether this is one of the bitwise operators {@link #BAND}, {@link #BOR}, {@link #BXOR}.
     *
     * @return true for the bitwise operators
     */
    public boolean isBitwise() {
        return this == BAND || this == BOR || this == BXOR;
    }

    /**
     * Whether this operator is defined for the type (bitwise operators are not defined for floating types).
     *
     * @param type an element type
     * @return false only for a bitwise operator and a floating-point type
     */
    public boolean supports(DataType type) {
        return !isBitwise() || !type.isFloatingPoint();
    }

    /**
     * The operator with this {@link #id()}, as read from a frame header.
     *
     * @param id an operator id
     * @return the operator
     * @throws IllegalArgumentException if no operator has this id
     */
    public static ReduceOp fromId(int id) {
        if (id < 0 || id >= BY_ID.length) {
            throw new IllegalArgumentException("unknown reduce op id: id=" + id);
        }
        return BY_ID[id];
    }

    /**
     * Parses the constant's name in any case ({@code sum}, {@code AVG}), or {@code prod} for {@link #PRODUCT}.
     *
     * @param name the name, surrounding blanks ignored
     * @return the operator
     * @throws IllegalArgumentException if the name is no operator's; the message lists the valid names
     */
    public static ReduceOp parse(String name) {
        String n = name.trim().toUpperCase(java.util.Locale.ROOT);
        if (n.equals("PROD")) {
            return PRODUCT;
        }
        try {
            return valueOf(n);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown reduce op: '" + name
                    + "', expected one of sum, product, min, max, avg, band, bor, bxor", e);
        }
    }
}
