package io.jccl.instrument;

import io.jccl.OpType;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One rank's byte and message counters, per operation. Thread-safe; read at any time, or {@link #reset()}.
 */
public final class TrafficCounters {
    private static final int COUNTERS = Counter.values().length;
    private final AtomicLongArray values = new AtomicLongArray(OpType.values().length * COUNTERS);

    /** Counters that all start at zero (each communicator makes its own). */
    public TrafficCounters() {
    }

    private static int index(OpType op, Counter c) {
        return op.id() * COUNTERS + c.id();
    }

    /**
     * Adds to one counter (the communicator counts as it sends and receives).
     *
     * @param op the operation
     * @param c the counter
     * @param delta the amount to add
     */
    public void add(OpType op, Counter c, long delta) {
        values.addAndGet(index(op, c), delta);
    }

    /**
     * One counter of one operation.
     *
     * @param op the operation
     * @param c the counter
     * @return its value since this rank's communicator was made or last {@link #reset()}
     */
    public long get(OpType op, Counter c) {
        return values.get(index(op, c));
    }

    /**
     * Payload bytes this rank sent (or, over shared memory, wrote for its peers) in calls of {@code op}.
     *
     * @param op the operation
     * @return {@code get(op, Counter.BYTES_SENT)}
     */
    public long bytesSent(OpType op) {
        return get(op, Counter.BYTES_SENT);
    }

    /**
     * Payload bytes this rank received (or, over shared memory, read from its peers) in calls of {@code op}.
     *
     * @param op the operation
     * @return {@code get(op, Counter.BYTES_RECEIVED)}
     */
    public long bytesReceived(OpType op) {
        return get(op, Counter.BYTES_RECEIVED);
    }

    /**
     * Sum of a counter over every operation.
     *
     * @param c the counter
     * @return the sum of {@link #get(OpType, Counter)} over every {@link OpType}
     */
    public long total(Counter c) {
        long sum = 0;
        for (OpType op : OpType.values()) {
            sum += get(op, c);
        }
        return sum;
    }

    /**
     * The counters that are not zero, per operation, e.g.
     * {@code TrafficCounters[allReduce: 2 calls, 24600 bytes sent, 24592 received, 6 messages sent, 6 received]};
     * {@code TrafficCounters[]} when nothing was counted.
     */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("TrafficCounters[");
        boolean first = true;
        for (OpType op : OpType.values()) {
            long calls = get(op, Counter.CALLS);
            long bs = get(op, Counter.BYTES_SENT);
            long br = get(op, Counter.BYTES_RECEIVED);
            long ms = get(op, Counter.MESSAGES_SENT);
            long mr = get(op, Counter.MESSAGES_RECEIVED);
            if (calls == 0 && bs == 0 && br == 0 && ms == 0 && mr == 0) {
                continue;
            }
            b.append(first ? "" : "; ").append(op.label()).append(": ").append(calls).append(calls == 1 ? " call, "
                    : " calls, ").append(bs).append(" bytes sent, ").append(br).append(" received, ").append(ms)
                    .append(" messages sent, ").append(mr).append(" received");
            first = false;
        }
        return b.append(']').toString();
    }

    /** Sets every counter to zero, for example before the calls to be measured. */
    public void reset() {
        for (int i = 0; i < values.length(); i++) {
            values.set(i, 0);
        }
    }
}
