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

    /** Direct buffers kept per capacity ({@link #takeDirect}): few, since they live outside the heap. */
    public static final int MAX_KEPT_DIRECT = 2;

    private final Queue<Object>[][] free;
    private final AtomicIntegerArray kept;
    private final Queue<java.nio.ByteBuffer>[] freeDirect;
    private final AtomicIntegerArray keptDirect = new AtomicIntegerArray(31);

    @SuppressWarnings({"unchecked", "rawtypes"})
    public ArrayPool() {
        DataType[] types = DataType.values();
        free = new Queue[types.length][31];
        kept = new AtomicIntegerArray(types.length * 31);
        freeDirect = new Queue[31];
        for (int c = 0; c < 31; c++) {
            freeDirect[c] = new ConcurrentLinkedQueue<>();
        }
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

    /**
     * A little-endian direct buffer with room for at least {@code bytes} bytes (contents undefined, position 0,
     * limit its capacity): working memory that a socket writes from and reads into without a copy. Capacities are
     * powers of two from {@link #MIN_POOLED_BYTES}; a few of each are kept ({@link #giveDirect}).
     */
    public java.nio.ByteBuffer takeDirect(int bytes) {
        int c = sizeClass(Math.max(bytes, MIN_POOLED_BYTES));
        java.nio.ByteBuffer b = c < 31 ? freeDirect[c].poll() : null;
        if (b != null) {
            keptDirect.decrementAndGet(c);
            return b.clear();
        }
        return java.nio.ByteBuffer.allocateDirect(c < 31 ? 1 << c : bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    }

    /** Returns a buffer taken with {@link #takeDirect}; anything else is left to the garbage collector. */
    public void giveDirect(java.nio.ByteBuffer b) {
        int cap = b.capacity();
        if (!b.isDirect() || Integer.bitCount(cap) != 1 || cap < MIN_POOLED_BYTES
                || b.order() != java.nio.ByteOrder.LITTLE_ENDIAN) {
            return;
        }
        int c = sizeClass(cap);
        if (keptDirect.incrementAndGet(c) <= MAX_KEPT_DIRECT) {
            freeDirect[c].offer(b);
        } else {
            keptDirect.decrementAndGet(c);
        }
    }
}
