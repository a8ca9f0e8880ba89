package io.jccl;

/**
 * Two ranks called different collectives, or the same collective with different arguments: a field of the peer's
 * frame header disagrees with this rank's own call.
 */
public final class CollectiveMismatchException extends JcclException {
    private final int peer;
    private final String field;
    private final String localValue;
    private final String peerValue;

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

    public int peer() {
        return peer;
    }

    /** The header field that differs: operation, sequence, dtype, count, root, reduceOp, algorithm, ... */
    public String field() {
        return field;
    }

    public String localValue() {
        return localValue;
    }

    public String peerValue() {
        return peerValue;
    }
}
