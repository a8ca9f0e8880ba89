package io.jccl.verify;

import java.util.Locale;

/** The primitives the verification table covers, with torch's names. */
public enum Primitive {
    ALL_REDUCE("all_reduce", true, false),
    BROADCAST("broadcast", false, true),
    ALL_GATHER("all_gather", false, false),
    REDUCE_SCATTER("reduce_scatter", true, false),
    REDUCE("reduce", true, true),
    GATHER("gather", false, true),
    SCATTER("scatter", false, true),
    ALL_TO_ALL("all_to_all", false, false);

    private final String torchName;
    private final boolean reduces;
    private final boolean rooted;

    Primitive(String torchName, boolean reduces, boolean rooted) {
        this.torchName = torchName;
        this.reduces = reduces;
        this.rooted = rooted;
    }

    public String torchName() {
        return torchName;
    }

    /** Whether the primitive takes a reduce op. */
    public boolean reduces() {
        return reduces;
    }

    public boolean rooted() {
        return rooted;
    }

    /** Whether the count must be a multiple of the world size (a per-rank block of count / world). */
    public boolean blocked() {
        return this == ALL_GATHER || this == REDUCE_SCATTER || this == GATHER || this == SCATTER
                || this == ALL_TO_ALL;
    }

    public static Primitive parse(String s) {
        String n = s.trim().toLowerCase(Locale.ROOT).replace("-", "_");
        for (Primitive p : values()) {
            if (p.torchName.equals(n) || p.torchName.replace("_", "").equals(n)) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown primitive: '" + s + "', expected one of all_reduce, broadcast, "
                + "all_gather, reduce_scatter, reduce, gather, scatter, all_to_all");
    }
}
