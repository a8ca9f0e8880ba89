package io.jccl;

/** The communicator failed (or was closed) earlier and refuses further calls; the cause is the first failure. */
public final class CommunicatorAbortedException extends JcclException {
    public CommunicatorAbortedException(int rank, OpType op, String message, Throwable cause) {
        super(rank, op, -1, "rank " + rank + ": " + op.label() + " refused: " + message, cause);
    }

    /** Call {@code seq} was running when this rank itself closed or aborted the communicator; it ended at once. */
    public CommunicatorAbortedException(int rank, OpType op, long seq, String message, Throwable cause) {
        super(rank, op, seq, where(rank, op, seq) + " ended: " + message, cause);
    }
}
