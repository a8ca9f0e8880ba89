package io.jccl;

/**
 * Another rank failed (or was aborted) and told this one; the reason is that rank's own error message. In a
 * sub-group, the process that failed may be outside it (a process of the world the transport lost): it is then
 * named by its world rank ({@link #outsideOrigin()}), never by a member's number.
 */
public final class PeerAbortedException extends JcclException {
    /** @serial the rank that failed first, or -1 when it is outside this communicator */
    private final int originRank;
    /** @serial the world rank of the process that failed first when it is outside this communicator, else -1 */
    private final int outsideOrigin;
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
        this(rank, op, seq, originRank, -1, reason);
    }

    private PeerAbortedException(int rank, OpType op, long seq, int originRank, int outsideOrigin, String reason) {
        super(rank, op, seq, where(rank, op, seq) + " aborted because " + (outsideOrigin >= 0 ? "world rank "
                + outsideOrigin + " (not in this group) failed" : originRank == rank && rank >= 0
                ? "of this rank's own failure or abort" : "rank " + originRank + " failed") + ": "
                + reason, null);
        this.originRank = originRank;
        this.outsideOrigin = outsideOrigin;
        this.reason = reason;
    }

    /**
     * The abort that a process outside this communicator caused, as {@code rank} of a sub-group raises it: a process
     * of the world that is not in the group failed or died, and its rank in the world is all that names it.
     *
     * @param rank the rank that raises it
     * @param op the operation that failed
     * @param seq the sequence number of the failed call
     * @param worldRank the world rank of the process that failed first
     * @param reason its error message
     * @return the exception, whose {@link #originRank()} is -1
     */
    public static PeerAbortedException outside(int rank, OpType op, long seq, int worldRank, String reason) {
        return new PeerAbortedException(rank, op, seq, -1, worldRank, reason);
    }

    /**
     * The rank that failed first and sent the abort; -1 when it is not a rank of this communicator
     * ({@link #outsideOrigin()}).
     *
     * @return that rank, or -1
     */
    public int originRank() {
        return originRank;
    }

    /**
     * The world rank of the process that failed first when it is not in this communicator (a sub-group's), else -1.
     *
     * @return that world rank, or -1
     */
    public int outsideOrigin() {
        return outsideOrigin;
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
