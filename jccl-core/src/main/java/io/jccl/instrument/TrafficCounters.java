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

    public void add(OpType op, Counter c, long delta) {
        values.addAndGet(index(op, c), delta);
    }

    public long get(OpType op, Counter c) {
        return values.get(index(op, c));
    }

    public long bytesSent(OpType op) {
        return get(op, Counter.BYTES_SENT);
    }

    public long bytesReceived(OpType op) {
        return get(op, Counter.BYTES_RECEIVED);
    }

    /** Sum of a counter over every operation. */
    public long total(Counter c) {
        long sum = 0;
        for (OpType op : OpType.values()) {
            sum += get(op, c);
        }
        return sum;
    }

    public void reset() {
        for (int i = 0; i < values.length(); i++) {
            values.set(i, 0);
        }
    }
}
