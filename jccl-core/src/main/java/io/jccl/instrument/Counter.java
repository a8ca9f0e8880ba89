package io.jccl.instrument;

/** Per-operation traffic counters, with stable ids. Bytes are payload bytes; headers are not counted. */
public enum Counter {
    /** Calls of the operation on this rank. */
    CALLS(0, "Calls"),
    /** Payload bytes sent to peers, or written for them in shared memory. */
    BYTES_SENT(1, "Bytes sent"),
    /** Payload bytes received from peers, or read from their shared memory. */
    BYTES_RECEIVED(2, "Bytes received"),
    /** Messages (frames) sent to peers; shared-memory rounds send none. */
    MESSAGES_SENT(3, "Messages sent"),
    /** Messages (frames) received from peers. */
    MESSAGES_RECEIVED(4, "Messages received");

    private final int id;
    private final String label;

    Counter(int id, String label) {
        this.id = id;
        this.label = label;
    }

    /**
     * The stable number of this counter.
     *
     * @return the id, from 0 up in declaration order
     */
    public int id() {
        return id;
    }

    /**
     * The name tables print.
     *
     * @return {@code Calls}, {@code Bytes sent}, ...
     */
    public String label() {
        return label;
    }
}
