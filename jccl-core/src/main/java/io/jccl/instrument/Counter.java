package io.jccl.instrument;

/** Per-operation traffic counters, with stable ids. Bytes are payload bytes; headers are not counted. */
public enum Counter {
    CALLS(0, "Calls"),
    BYTES_SENT(1, "Bytes sent"),
    BYTES_RECEIVED(2, "Bytes received"),
    MESSAGES_SENT(3, "Messages sent"),
    MESSAGES_RECEIVED(4, "Messages received");

    private final int id;
    private final String label;

    Counter(int id, String label) {
        this.id = id;
        this.label = label;
    }

    public int id() {
        return id;
    }

    public String label() {
        return label;
    }
}
