package io.jccl;

import java.time.Duration;

/** A receive passed its deadline: the peer never sent what this rank waited for. */
public final class CollectiveTimeoutException extends JcclException {
    /** @serial the rank waited for */
    private final int peer;
    /** @serial the algorithm's step */
    private final int step;
    /** @serial the time waited */
    private final Duration timeout;

    /**
     * A receive of {@code rank} that waited {@code timeout} for {@code peer} in vain.
     *
     * @param rank the rank that raises it
     * @param op the operation that failed
     * @param seq the sequence number of the failed call
     * @param peer the rank that did not send
     * @param step the algorithm's step
     * @param stepDescription the step in words, for the message
     * @param timeout the time waited
     */
    public CollectiveTimeoutException(int rank, OpType op, long seq, int peer, int step, String stepDescription,
                                      Duration timeout) {
        super(rank, op, seq, where(rank, op, seq) + " timed out after " + timeout.toMillis() + " ms waiting for rank "
                + peer + " at " + stepDescription, null);
        this.peer = peer;
        this.step = step;
        this.timeout = timeout;
    }

    /**
     * The rank this rank was waiting for.
     *
     * @return the peer's rank
     */
    public int peer() {
        return peer;
    }

    /**
     * The step of the algorithm at which it waited.
     *
     * @return the step, from 0
     */
    public int step() {
        return step;
    }

    /**
     * How long this rank waited: the call's timeout.
     *
     * @return the timeout that passed
     */
    public Duration timeout() {
        return timeout;
    }
}
