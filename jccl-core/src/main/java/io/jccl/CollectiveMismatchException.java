package io.jccl;

/**
 * Two ranks called different collectives, or the same collective with different arguments: a field of the peer's
 * frame header disagrees with this rank's own call.
 */
public final class CollectiveMismatchException extends JcclException {
    /** @serial the rank whose call disagrees */
    private final int peer;
    /** @serial the header field that differs */
    private final String field;
    /** @serial the field's value in this rank's call */
    private final String localValue;
    /** @serial the field's value in the peer's call */
    private final String peerValue;

    /**
     * A disagreement found by {@code rank} in {@code peer}'s frame header.
     *
     * @param rank the rank that raises it
     * @param op the operation that failed
     * @param seq the sequence number of the failed call
     * @param peer the rank whose call disagrees
     * @param field the header field that differs
     * @param localValue the field's value in this rank's call
     * @param peerValue the field's value in the peer's call
     */
    public CollectiveMismatchException(int rank, OpType op, long seq, int peer, String field, String localValue,
                                       String peerValue) {
        super(rank, op, seq, where(rank, op, seq) + ": mismatch with rank " + peer + " in " + field + ": rank "
                + rank + " has " + field + "=" + localValue + ", rank " + peer + " has " + field + "=" + peerValue,
                null);
        this.peer = peer;
        this.field = field;
        this.localValue = localValue;
        this.peerValue = peerValue;
    }

    /**
     * The rank whose call disagrees with this rank's.
     *
     * @return the peer's rank
     */
    public int peer() {
        return peer;
    }

    /**
     * The header field that differs: operation, sequence, dtype, count, root, reduceOp, algorithm, ...
     *
     * @return the field's name
     */
    public String field() {
        return field;
    }

    /**
     * The field's value in this rank's call.
     *
     * @return the value as the message prints it
     */
    public String localValue() {
        return localValue;
    }

    /**
     * The field's value in the peer's call.
     *
     * @return the value as the message prints it
     */
    public String peerValue() {
        return peerValue;
    }
}
