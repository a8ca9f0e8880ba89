package io.jccl;

/** The operations a communicator performs, with stable ids carried in frame headers and used by counters. */
public enum OpType {
    ALL_REDUCE(0, "allReduce"),
    BROADCAST(1, "broadcast"),
    ALL_GATHER(2, "allGather"),
    REDUCE_SCATTER(3, "reduceScatter"),
    REDUCE(4, "reduce"),
    GATHER(5, "gather"),
    SCATTER(6, "scatter"),
    ALL_TO_ALL(7, "allToAll"),
    BARRIER(8, "barrier"),
    SEND(9, "send"),
    RECV(10, "recv");

    private static final OpType[] BY_ID = values();

    private final int id;
    private final String label;

    OpType(int id, String label) {
        this.id = id;
        this.label = label;
    }

    public int id() {
        return id;
    }

    /** The name used in messages, as in the public API: {@code allReduce}, {@code broadcast}, ... */
    public String label() {
        return label;
    }

    public static OpType fromId(int id) {
        if (id < 0 || id >= BY_ID.length) {
            throw new IllegalArgumentException("unknown operation id: id=" + id);
        }
        return BY_ID[id];
    }
}
