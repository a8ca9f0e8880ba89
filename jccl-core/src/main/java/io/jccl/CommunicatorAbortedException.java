package io.jccl;

/** The communicator failed (or was closed) earlier and refuses further calls; the cause is the first failure. */
public final class CommunicatorAbortedException extends JcclException {
    public CommunicatorAbortedException(int rank, OpType op, String message, Throwable cause) {
        super(rank, op, -1, "rank " + rank + ": " + op.label() + " refused: " + message, cause);
    }
}
