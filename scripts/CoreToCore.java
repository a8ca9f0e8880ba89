import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * This machine's core-to-core round trip, which bounds a small collective between two ranks: two threads pass a
 * counter back and forth through two fields on cache lines of their own (one writes, the other spins until it
 * sees it), four windows of 500,000 round trips, nanoseconds per round trip each. Both threads spin, so each holds
 * a core of its own. Run it a few times in a row; the readings differ between runs where the host moves the
 * virtual CPUs (docs/performance.md, session 34):
 *
 * <pre>for i in $(seq 12); do java scripts/CoreToCore.java; done</pre>
 */
public final class CoreToCore {
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    /** ping at [16], pong at [48]: 256 bytes apart, so that no prefetched pair of lines holds both. */
    private static final long[] LINES = new long[64];
    private static final int PING = 16;
    private static final int PONG = 48;
    private static final int WINDOW = 500_000;

    public static void main(String[] args) throws InterruptedException {
        int windows = 5; // the first warms the JIT and is not shown
        Thread other = new Thread(() -> {
            for (long i = 1; i <= (long) windows * WINDOW; i++) {
                while ((long) LONGS.getAcquire(LINES, PING) != i) {
                    Thread.onSpinWait();
                }
                LONGS.setRelease(LINES, PONG, i);
            }
        });
        other.start();
        StringBuilder out = new StringBuilder();
        for (int w = 0; w < windows; w++) {
            long t0 = System.nanoTime();
            for (long i = (long) w * WINDOW + 1; i <= (long) (w + 1) * WINDOW; i++) {
                LONGS.setRelease(LINES, PING, i);
                while ((long) LONGS.getAcquire(LINES, PONG) != i) {
                    Thread.onSpinWait();
                }
            }
            long ns = (System.nanoTime() - t0) / WINDOW;
            if (w > 0) {
                out.append(' ').append(ns);
            }
        }
        other.join();
        System.out.println("core-to-core round trip, ns:" + out);
    }
}
