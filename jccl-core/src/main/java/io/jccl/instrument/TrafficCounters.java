package io.jccl.instrument;

import io.jccl.OpType;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One rank's byte and message counters, per operation. Thread-safe; read at any time, or {@link #reset()}.
 *
 * <p>Two kinds of adds: {@link #add} from any thread (an atomic add), and {@link #addInTurn} from the call whose
 * turn it is in its communicator's sequence, which needs no atomic instruction: such calls run one at a time, and
 * each turn's end happens-before the next turn's start, so their adds have one writer at a time (a small call counts
 * three times; three atomic adds were about a tenth of its cost). A read sums both.
 */
public final class TrafficCounters {
    private static final int COUNTERS = Counter.values().length;
    private static final VarHandle IN_TURN = MethodHandles.arrayElementVarHandle(long[].class);
    private final AtomicLongArray values = new AtomicLongArray(OpType.values().length * COUNTERS);
    /** What {@link #addInTurn} added: one writer at a time; read with opaque loads (whole values, maybe not the latest). */
    private final long[] inTurn = new long[OpType.values().length * COUNTERS];
    /** {@link #inTurn}'s values at the last {@link #reset}, which subtracts rather than writes them (a writer's add would undo a write). */
    private final AtomicLongArray inTurnBase = new AtomicLongArray(inTurn.length);

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
     * As {@link #add}, for the library's pipeline alone (a program must use {@link #add}: it cannot hold a
     * communicator's turn, and its adds would be lost): only from the call whose turn it is in this counters'
     * communicator (calls of the communicator's sequence, on the thread that runs them, including their subgroups on
     * that thread), never from any other thread at the same time.
     *
     * @param op the operation
     * @param c the counter
     * @param delta the amount to add
     */
    public void addInTurn(OpType op, Counter c, long delta) {
        int i = index(op, c);
        IN_TURN.setOpaque(inTurn, i, inTurn[i] + delta);
    }

    /**
     * One counter of one operation.
     *
     * @param op the operation
     * @param c the counter
     * @return its value since this rank's communicator was made or last {@link #reset()}
     */
    public long get(OpType op, Counter c) {
        int i = index(op, c);
        // the base first: an in-turn value read after it is at least the base a reset took, so no read goes negative
        long base = inTurnBase.get(i);
        return (long) IN_TURN.getOpaque(inTurn, i) - base + values.get(i);
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
            inTurnBase.set(i, (long) IN_TURN.getOpaque(inTurn, i));
        }
    }
}
