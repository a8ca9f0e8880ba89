package io.jccl.transport;

import io.jccl.DataType;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * Payload arrays for received frames, reused instead of allocated per message: large arrays are what the JVM
 * allocates slowest (G1 places arrays over half a heap region straight into the old generation), and a ring
 * allreduce of T bytes would otherwise allocate 2T per call. Arrays of at least {@link #MIN_POOLED_BYTES} come in
 * power-of-two capacities and a few of each size are kept; a taken array is not zeroed, so readers use the frame
 * header's payload count, never the array's length. Thread-safe; one pool per transport (no global state).
 */
public final class ArrayPool {
    /** Smaller payloads are simply allocated. */
    public static final int MIN_POOLED_BYTES = 32 << 10;
    /** Arrays kept per (dtype, capacity). */
    public static final int MAX_KEPT = 6;

    private final Queue<Object>[][] free;
    private final AtomicIntegerArray kept;

    @SuppressWarnings({"unchecked", "rawtypes"})
    public ArrayPool() {
        DataType[] types = DataType.values();
        free = new Queue[types.length][31];
        kept = new AtomicIntegerArray(types.length * 31);
        for (int t = 0; t < types.length; t++) {
            for (int c = 0; c < 31; c++) {
                free[t][c] = new ConcurrentLinkedQueue<>();
            }
        }
    }

    private static int sizeClass(int n) {
        return 32 - Integer.numberOfLeadingZeros(Math.max(1, n) - 1);
    }

    /** An array of {@code dt} with room for at least {@code n} elements (contents undefined). */
    public Object take(DataType dt, int n) {
        if ((long) n * dt.sizeBytes() < MIN_POOLED_BYTES || n > (1 << 30)) {
            return dt.newArray(n);
        }
        int c = sizeClass(n);
        Object a = free[dt.id()][c].poll();
        if (a != null) {
            kept.decrementAndGet(dt.id() * 31 + c);
            return a;
        }
        return dt.newArray(1 << c);
    }

    /** Takes back a received frame's payload (abort frames carry text, not pooled data). */
    public void giveBack(Frame frame) {
        if (!frame.header().isAbort()) {
            give(DataType.fromId(frame.header().dtype()), frame.payload());
        }
    }

    /** Returns an array taken from this pool; anything else is left to the garbage collector. */
    public void give(DataType dt, Object array) {
        if (array == null || array.getClass() != dt.arrayClass()) {
            return;
        }
        int len = java.lang.reflect.Array.getLength(array);
        if (Integer.bitCount(len) != 1 || (long) len * dt.sizeBytes() < MIN_POOLED_BYTES) {
            return;
        }
        int c = sizeClass(len);
        if (kept.incrementAndGet(dt.id() * 31 + c) <= MAX_KEPT) {
            free[dt.id()][c].offer(array);
        } else {
            kept.decrementAndGet(dt.id() * 31 + c);
        }
    }
}
