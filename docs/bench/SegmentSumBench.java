import java.lang.foreign.*;
import java.nio.*;
import java.nio.channels.FileChannel;
import java.nio.file.*;

/** Issue 9: a float sum out of a mapped MemorySegment (JDK 22+) against the FloatBuffer path; docs/performance.md. */
public class SegmentSumBench {
    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static void segLoop(float[] acc, int a, int n, MemorySegment src, long from) {
        for (int i = 0; i < n; i++) acc[a + i] += src.getAtIndex(F, from + i);
    }
    static void segCopy(float[] acc, int a, int n, MemorySegment src, long from, float[] x, float[] y) {
        for (int done = 0; done < n; done += 2048) {
            int m = Math.min(2048, n - done);
            System.arraycopy(acc, a + done, x, 0, m);
            MemorySegment.copy(src, F, (from + done) * 4, y, 0, m);
            for (int i = 0; i < m; i++) x[i] += y[i];
            System.arraycopy(x, 0, acc, a + done, m);
        }
    }
    static void bufCopy(float[] acc, int a, int n, FloatBuffer src, int from, float[] x, float[] y) {
        for (int done = 0; done < n; done += 2048) {
            int m = Math.min(2048, n - done);
            System.arraycopy(acc, a + done, x, 0, m);
            src.get(from + done, y, 0, m);
            for (int i = 0; i < m; i++) x[i] += y[i];
            System.arraycopy(x, 0, acc, a + done, m);
        }
    }
    public static void main(String[] args) throws Exception {
        Path p = Paths.get("/dev/shm/jccl-segment-sum-bench");
        int n = Integer.parseInt(args[0]); int reps = Integer.parseInt(args[1]);
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
             Arena arena = Arena.ofShared()) {
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, 4L * n + 4096, arena);
            FloatBuffer fb = ch.map(FileChannel.MapMode.READ_WRITE, 0, 4L * n + 4096).order(ByteOrder.nativeOrder()).asFloatBuffer();
            float[] acc = new float[n + 64]; float[] x = new float[2048], y = new float[2048];
            for (int round = 0; round < 8; round++) {
                long t0 = System.nanoTime();
                for (int k = 0; k < reps; k++) segLoop(acc, 8, n, seg, 16);
                long t1 = System.nanoTime();
                for (int k = 0; k < reps; k++) segCopy(acc, 8, n, seg, 16, x, y);
                long t2 = System.nanoTime();
                for (int k = 0; k < reps; k++) bufCopy(acc, 8, n, fb, 16, x, y);
                long t3 = System.nanoTime();
                if (round >= 6) System.out.printf("n=%d segment loop %.2f, segment copy+add %.2f, FloatBuffer copy+add %.2f us%n", n, (t1-t0)/1e3/reps, (t2-t1)/1e3/reps, (t3-t2)/1e3/reps);
            }
        }
        Files.delete(p);
    }
}
