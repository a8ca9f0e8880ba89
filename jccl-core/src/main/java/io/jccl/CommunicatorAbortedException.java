package io.jccl;

/** The communicator failed (or was closed) earlier and refuses further calls; the cause is the first failure. */
public final class CommunicatorAbortedException extends JcclException {
    /**
     * A call refused before it started: the communicator had already failed or was closed.
     *
     * @param rank the rank that raises it
     * @param op the operation refused
     * @param message why the communicator is unusable
     * @param cause the first failure, or null
     */
    public CommunicatorAbortedException(int rank, OpType op, String message, Throwable cause) {
        super(rank, op, -1, "rank " + rank + ": " + op.label() + " refused: " + message, cause);
    }

    /**
     * Call {@code seq} was running when this rank itself closed or aborted the communicator; it ended at once.
     *
     * @param rank the rank that raises it
     * @param op the operation that was running
     * @param seq its sequence number
     * @param message why it ended
     * @param cause the abort, or null
     */
    public CommunicatorAbortedException(int rank, OpType op, long seq, String message, Throwable cause) {
        super(rank, op, seq, where(rank, op, seq) + " ended: " + message, cause);
    }
}
