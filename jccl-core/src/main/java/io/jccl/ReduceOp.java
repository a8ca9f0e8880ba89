package io.jccl;

/**
 * Reduction operators, with torch.distributed's semantics.
 *
 * <p>{@link #AVG} is SUM followed by division by the world size in the element type (floating types round the
 * quotient once; integer types truncate toward zero, as NCCL does). The bitwise operators apply only to integer
 * types. The {@link #id()} is stable: it is what the wire header carries.
 */
public enum ReduceOp {
    SUM(0),
    PRODUCT(1),
    MIN(2),
    MAX(3),
    AVG(4),
    BAND(5),
    BOR(6),
    BXOR(7);

    private static final ReduceOp[] BY_ID = values();

    private final int id;

    ReduceOp(int id) {
        this.id = id;
    }

    public int id() {
        return id;
    }

    public boolean isBitwise() {
        return this == BAND || this == BOR || this == BXOR;
    }

    /** Whether this operator is defined for the type (bitwise operators are not defined for floating types). */
    public boolean supports(DataType type) {
        return !isBitwise() || !type.isFloatingPoint();
    }

    public static ReduceOp fromId(int id) {
        if (id < 0 || id >= BY_ID.length) {
            throw new IllegalArgumentException("unknown reduce op id: id=" + id);
        }
        return BY_ID[id];
    }

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
