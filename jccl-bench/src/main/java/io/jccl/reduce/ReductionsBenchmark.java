package io.jccl.reduce;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.concurrent.TimeUnit;

/**
 * A float sum of {@code n} elements, {@code acc[a + i] += in[b + i]}, four ways: {@code sameOffset} and
 * {@code otherOffset} through {@link Reductions#reduce} (equal offsets: the same-index loop; different offsets:
 * staged through blocks at offset 0), {@code elementLoop} the plain loop with two offsets that C2 leaves scalar,
 * and {@code directBuffer} the loop out of a direct {@code FloatBuffer} that the shm arena used to sum with.
 * {@code java -jar jccl-bench/target/jccl-jmh.jar Reductions}; figures in docs/performance.md.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class ReductionsBenchmark {
    @Param({"8192", "1048576"})
    public int n;

    private float[] acc;
    private float[] in;
    private FloatBuffer direct;

    @Setup
    public void setUp() {
        acc = new float[n + 64];
        in = new float[n + 64];
        direct = ByteBuffer.allocateDirect(4 * (n + 64)).order(ByteOrder.nativeOrder()).asFloatBuffer();
        for (int i = 0; i < n + 64; i++) {
            in[i] = i;
            direct.put(i, i);
        }
    }

    @Benchmark
    public float[] sameOffset() {
        Reductions.reduce(DataType.FLOAT32, ReduceOp.SUM, acc, 8, in, 8, n);
        return acc;
    }

    @Benchmark
    public float[] otherOffset() {
        Reductions.reduce(DataType.FLOAT32, ReduceOp.SUM, acc, 8, in, 16, n);
        return acc;
    }

    @Benchmark
    public float[] elementLoop() {
        add(acc, 8, in, 16, n);
        return acc;
    }

    @Benchmark
    public float[] directBuffer() {
        float[] x = acc;
        FloatBuffer y = direct;
        for (int i = 0; i < n; i++) {
            x[8 + i] += y.get(16 + i);
        }
        return acc;
    }

    private static void add(float[] x, int a, float[] y, int b, int m) {
        for (int i = 0; i < m; i++) {
            x[a + i] += y[b + i];
        }
    }
}
