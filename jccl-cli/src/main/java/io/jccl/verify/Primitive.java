package io.jccl.verify;

import io.jccl.OpType;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What the verification table needs of each collective ({@link OpType}) it covers: torch's name for it, whether it
 * takes a reduce op, whether it has a root, and whether its count must be a multiple of the world size (a per-rank
 * block of count / world).
 */
public record Primitive(OpType type, String torchName, boolean reduces, boolean rooted, boolean blocked) {
    private static final Map<OpType, Primitive> TABLE = new LinkedHashMap<>();

    static {
        add(OpType.ALL_REDUCE, "all_reduce", true, false, false);
        add(OpType.BROADCAST, "broadcast", false, true, false);
        add(OpType.ALL_GATHER, "all_gather", false, false, true);
        add(OpType.REDUCE_SCATTER, "reduce_scatter", true, false, true);
        add(OpType.REDUCE, "reduce", true, true, false);
        add(OpType.GATHER, "gather", false, true, true);
        add(OpType.SCATTER, "scatter", false, true, true);
        add(OpType.ALL_TO_ALL, "all_to_all", false, false, true);
    }

    /** The collectives the table covers, in table order. */
    public static final List<OpType> ALL = List.copyOf(TABLE.keySet());

    private static void add(OpType type, String torchName, boolean reduces, boolean rooted, boolean blocked) {
        TABLE.put(type, new Primitive(type, torchName, reduces, rooted, blocked));
    }

    /** The table's data of {@code type}. */
    public static Primitive of(OpType type) {
        Primitive p = TABLE.get(type);
        if (p == null) {
            throw new IllegalArgumentException("not a primitive of the verification table: " + type);
        }
        return p;
    }

    /** The collective named {@code s}, torch's name with or without underscores (or with dashes). */
    public static OpType parse(String s) {
        String n = s.trim().toLowerCase(Locale.ROOT).replace("-", "_");
        for (Primitive p : TABLE.values()) {
            if (p.torchName.equals(n) || p.torchName.replace("_", "").equals(n)) {
                return p.type;
            }
        }
        throw new IllegalArgumentException("unknown primitive: '" + s + "', expected one of all_reduce, broadcast, "
                + "all_gather, reduce_scatter, reduce, gather, scatter, all_to_all");
    }
}
