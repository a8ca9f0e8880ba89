package io.jccl;

/** Another rank failed (or was aborted) and told this one; the reason is that rank's own error message. */
public final class PeerAbortedException extends JcclException {
    private final int originRank;
    private final String reason;

    public PeerAbortedException(int rank, OpType op, long seq, int originRank, String reason) {
        super(rank, op, seq, where(rank, op, seq) + " aborted because rank " + originRank + " failed: " + reason,
                null);
        this.originRank = originRank;
        this.reason = reason;
    }

    /** The rank that failed first and sent the abort. */
    public int originRank() {
        return originRank;
    }

    public String reason() {
        return reason;
    }
}
