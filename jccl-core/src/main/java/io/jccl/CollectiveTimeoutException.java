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
        this(rank, op, seq, peer, peer, step, stepDescription, timeout, null);
    }

    /**
     * A timeout whose cause the ranks found out by asking each other ({@code culprits}: the sentence naming the
     * ranks that never reached the call, or null when every rank reached it); {@code culprit} is the first of them,
     * else the rank waited for.
     *
     * @param rank the rank that raises it
     * @param op the operation that failed
     * @param seq the sequence number of the failed call
     * @param culprit the rank at fault, returned by {@link #peer()}
     * @param waitedFor the rank this rank's receive waited for
     * @param step the algorithm's step
     * @param stepDescription the step in words, for the message
     * @param timeout the time waited
     * @param culprits the sentence naming the ranks that never reached the call, for the message; null when every
     *        rank reached it
     */
    public CollectiveTimeoutException(int rank, OpType op, long seq, int culprit, int waitedFor, int step,
                                      String stepDescription, Duration timeout, String culprits) {
        super(rank, op, seq, where(rank, op, seq) + " timed out after " + timeout.toMillis() + " ms"
                + (culprits == null ? " waiting for rank " + waitedFor + " at " + stepDescription
                : ": " + culprits + "; this rank waited for rank " + waitedFor + " at " + stepDescription), null);
        this.peer = culprit;
        this.step = step;
        this.timeout = timeout;
    }

    /**
     * The rank at fault: the first rank that never reached the call when the ranks could tell (they ask each other
     * before raising), else the rank this rank was waiting for.
     *
     * @return the rank at fault
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
