package io.jccl;

/**
 * Base of every failure a collective raises. Each subclass names the rank that raised it, the operation and
 * its sequence number (the n-th collective of the communicator, counted from 0), where they apply.
 */
public class JcclException extends RuntimeException {
    private final int rank;
    private final OpType operation;
    private final long sequence;

    public JcclException(int rank, OpType operation, long sequence, String message, Throwable cause) {
        super(message, cause);
        this.rank = rank;
        this.operation = operation;
        this.sequence = sequence;
    }

    public JcclException(String message, Throwable cause) {
        this(-1, null, -1, message, cause);
    }

    /** The rank that raised this exception, or -1. */
    public int rank() {
        return rank;
    }

    /** The operation that failed, or null. */
    public OpType operation() {
        return operation;
    }

    /** The sequence number of the failed call, or -1. */
    public long sequence() {
        return sequence;
    }

    static String where(int rank, OpType op, long seq) {
        return "rank " + rank + ": " + op.label() + " #" + seq;
    }
}
