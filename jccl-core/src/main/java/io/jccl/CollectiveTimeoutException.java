package io.jccl;

import java.time.Duration;

/** A receive passed its deadline: the peer never sent what this rank waited for. */
public final class CollectiveTimeoutException extends JcclException {
    private final int peer;
    private final int step;
    private final Duration timeout;

    public CollectiveTimeoutException(int rank, OpType op, long seq, int peer, int step, String stepDescription,
                                      Duration timeout) {
        super(rank, op, seq, where(rank, op, seq) + " timed out after " + timeout.toMillis() + " ms waiting for rank "
                + peer + " at " + stepDescription, null);
        this.peer = peer;
        this.step = step;
        this.timeout = timeout;
    }

    /** The rank this rank was waiting for. */
    public int peer() {
        return peer;
    }

    /** The step of the algorithm at which it waited. */
    public int step() {
        return step;
    }

    public Duration timeout() {
        return timeout;
    }
}
