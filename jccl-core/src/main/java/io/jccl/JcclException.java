package io.jccl;

/**
 * Base of every failure a collective raises. Each subclass names the rank that raised it, the operation and
 * its sequence number (the n-th collective of the communicator, counted from 0), where they apply.
 */
public class JcclException extends RuntimeException {
    /** @serial the rank that raised it, or -1 */
    private final int rank;
    /** @serial the operation that failed, or null */
    private final OpType operation;
    /** @serial the sequence number of the failed call, or -1 */
    private final long sequence;

    /**
     * A failure of a call.
     *
     * @param rank the rank that raises it, or -1
     * @param operation the operation that failed, or null
     * @param sequence the sequence number of the failed call, or -1
     * @param message the whole message (the subclasses start it with the rank, operation and number)
     * @param cause the underlying failure, or null
     */
    public JcclException(int rank, OpType operation, long sequence, String message, Throwable cause) {
        super(message, cause);
        this.rank = rank;
        this.operation = operation;
        this.sequence = sequence;
    }

    /**
     * A failure that belongs to no one call (rank -1, no operation, sequence -1).
     *
     * @param message the message
     * @param cause the underlying failure, or null
     */
    public JcclException(String message, Throwable cause) {
        this(-1, null, -1, message, cause);
    }

    /**
     * The rank that raised this exception, or -1.
     *
     * @return the rank, or -1 where no rank applies
     */
    public int rank() {
        return rank;
    }

    /**
     * The operation that failed, or null.
     *
     * @return the operation, or null where none applies
     */
    public OpType operation() {
        return operation;
    }

    /**
     * The sequence number of the failed call, or -1.
     *
     * @return the number, from 0, or -1 where none applies
     */
    public long sequence() {
        return sequence;
    }

    static String where(int rank, OpType op, long seq) {
        return "rank " + rank + ": " + op.label() + " #" + seq;
    }
}
