package io.jccl;

/** The operations a communicator performs, with stable ids carried in frame headers and used by counters. */
public enum OpType {
    /** {@link Communicator#allReduce(Tensor, ReduceOp)}: every rank gets the reduction of all ranks' data. */
    ALL_REDUCE(0, "allReduce"),
    /** {@link Communicator#broadcast(Tensor, int)}: every rank gets the root's data. */
    BROADCAST(1, "broadcast"),
    /** {@link Communicator#allGather(Tensor, Tensor)}: every rank gets every rank's block, in rank order. */
    ALL_GATHER(2, "allGather"),
    /** {@link Communicator#reduceScatter(Tensor, Tensor, ReduceOp)}: rank i gets block i of the reduction. */
    REDUCE_SCATTER(3, "reduceScatter"),
    /** {@link Communicator#reduce(Tensor, int, ReduceOp)}: the root gets the reduction. */
    REDUCE(4, "reduce"),
    /** {@link Communicator#gather(Tensor, Tensor, int)}: the root gets every rank's block, in rank order. */
    GATHER(5, "gather"),
    /** {@link Communicator#scatter(Tensor, Tensor, int)}: rank i gets block i of the root's data. */
    SCATTER(6, "scatter"),
    /** {@link Communicator#allToAll(Tensor, Tensor)}: rank i's block j goes to rank j, as block i. */
    ALL_TO_ALL(7, "allToAll"),
    /** {@link Communicator#barrier()}: no rank leaves before every rank has entered. */
    BARRIER(8, "barrier"),
    /** {@link Communicator#send(Tensor, int, int)}: to one peer. */
    SEND(9, "send"),
    /** {@link Communicator#recv(Tensor, int, int)}: from one peer. */
    RECV(10, "recv");

    private static final OpType[] BY_ID = values();

    private final int id;
    private final String label;

    OpType(int id, String label) {
        this.id = id;
        this.label = label;
    }

    /**
     * The stable number of this operation, as frame headers and counters use it.
     *
     * @return the id, from 0 up in declaration order
     */
    public int id() {
        return id;
    }

    /**
     * The name used in messages, as in the public API: {@code allReduce}, {@code broadcast}, ...
     *
     * @return the method name of the operation on {@link Communicator}
     */
    public String label() {
        return label;
    }

    /**
     * The operation with this {@link #id()}, as read from a frame header.
     *
     * @param id an operation id
     * @return the operation
     * @throws IllegalArgumentException if no operation has this id
     */
    public static OpType fromId(int id) {
        if (id < 0 || id >= BY_ID.length) {
            throw new IllegalArgumentException("unknown operation id: id=" + id);
        }
        return BY_ID[id];
    }
}
