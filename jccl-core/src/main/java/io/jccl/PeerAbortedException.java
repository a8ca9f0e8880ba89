package io.jccl;

/** Another rank failed (or was aborted) and told this one; the reason is that rank's own error message. */
public final class PeerAbortedException extends JcclException {
    /** @serial the rank that failed first */
    private final int originRank;
    /** @serial that rank's error message */
    private final String reason;

    /**
     * The abort {@code originRank} sent, as {@code rank} raises it.
     *
     * @param rank the rank that raises it
     * @param op the operation that failed
     * @param seq the sequence number of the failed call
     * @param originRank the rank that failed first and sent the abort
     * @param reason that rank's error message
     */
    public PeerAbortedException(int rank, OpType op, long seq, int originRank, String reason) {
        super(rank, op, seq, where(rank, op, seq) + " aborted because rank " + originRank + " failed: " + reason,
                null);
        this.originRank = originRank;
        this.reason = reason;
    }

    /**
     * The rank that failed first and sent the abort.
     *
     * @return that rank
     */
    public int originRank() {
        return originRank;
    }

    /**
     * The failed rank's own error message.
     *
     * @return the reason it sent
     */
    public String reason() {
        return reason;
    }
}
