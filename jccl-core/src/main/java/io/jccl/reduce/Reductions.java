package io.jccl.reduce;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;

import static io.jccl.reduce.HalfFloats.bfloat16ToFloat;
import static io.jccl.reduce.HalfFloats.floatToBfloat16;
import static io.jccl.reduce.HalfFloats.floatToHalf;
import static io.jccl.reduce.HalfFloats.halfToFloat;

/**
 * Element-wise reduction kernels: {@code acc[i] = op(acc[i], in[i])}, one loop per type and operator.
 *
 * <p>Semantics follow gloo on the CPU. Integer SUM and PRODUCT wrap; UINT8 compares unsigned; FLOAT16 and
 * BFLOAT16 widen to float, operate once, and round back to nearest even; MIN and MAX return
 * {@code in < acc ? in : acc} (and the mirror), so ties and NaN keep the accumulated value. AVG reduces as SUM;
 * {@link #divide} finishes it.
 *
 * <p>Vectorised loops: the operator switch sits outside each loop, and each loop has a same-index form,
 * {@code x[i] op= y[i]}, taken when both ranges start at the same offset. HotSpot's C2 (measured on JDK 17 and 25)
 * vectorises only that form: with two different offsets, {@code x[a + i] op= y[b + i]}, it cannot rule out that
 * the arrays are one and the ranges overlap, and runs the loop element by element (8,192 floats: 0.8 us against
 * 3.1-6.4 us on AVX-512). Longer reductions with different offsets are therefore staged through two small blocks
 * at offset 0 ({@link #staged}). FLOAT16 and BFLOAT16 convert each element and are not staged.
 */
public final class Reductions {
    /** Reductions of this many elements or more with different offsets are staged (see {@link #staged}). */
    static final int STAGE_MIN = 64;
    private static final int BLOCK_BYTES = 8 << 10;
    /** By thread: two blocks of {@link #BLOCK_BYTES} per data type, made on first use. */
    private static final ThreadLocal<Object[]> SCRATCH =
            ThreadLocal.withInitial(() -> new Object[2 * DataType.values().length]);

    private Reductions() {
    }

    /** {@code acc = op(acc, in)} element-wise over {@code acc.count()} elements; {@code in} must be as long. */
    public static void reduce(ReduceOp op, Buf acc, Buf in) {
        if (acc.isMemory() || in.isMemory()) {
            blocked(op, acc, acc, in, null);
            return;
        }
        reduce(acc.dtype(), op, acc.array(), acc.offset(), in.array(), in.offset(), acc.count());
    }

    /**
     * {@code acc = op(from, in)} where a buffer is over memory (or {@code in} is null and {@code payload}, at its
     * position, is read instead): through the two blocks of {@link #staged}, each element copied into a block, one
     * vectorised loop per block, and the result copied back. Blocks are small enough to stay in the cache.
     */
    private static void blocked(ReduceOp op, Buf acc, Buf from, Buf in, java.nio.ByteBuffer payload) {
        DataType dt = acc.dtype();
        int n = acc.count();
        Object[] scratch = SCRATCH.get();
        int k = blocks(scratch, dt);
        int block = BLOCK_BYTES / dt.sizeBytes();
        Buf x = new Buf(dt, scratch[k], 0, block);
        Buf y = new Buf(dt, scratch[k + 1], 0, block);
        for (int done = 0; done < n; done += block) {
            int m = Math.min(block, n - done);
            from.copyTo(done, x, 0, m);
            if (in != null) {
                in.copyTo(done, y, 0, m);
            } else {
                y.slice(0, m).readFrom(payload);
            }
            kernel(dt, op, x.array(), 0, y.array(), 0, m);
            x.copyTo(0, acc, done, m);
        }
    }

    /**
     * {@code acc = op(base, payload)} for the next {@code acc.count()} elements of {@code payload} at its position
     * (advanced past them), {@code base} null meaning {@code acc}'s own values: what a posted receive does with the
     * bytes it takes from a socket buffer ({@link #reduceFrom(DataType, ReduceOp, Object, int, Object, int,
     * java.nio.ByteBuffer, int, Object)} for arrays; buffers over memory go through the blocks of {@link #staged}).
     */
    public static void reduceFrom(ReduceOp op, Buf acc, Buf base, java.nio.ByteBuffer payload, Object scratch) {
        if (acc.isMemory() || (base != null && base.isMemory())) {
            if (acc.count() > 0) {
                blocked(op, acc, base != null ? base : acc, null, payload);
            }
            return;
        }
        reduceFrom(acc.dtype(), op, acc.array(), acc.offset(), base == null ? null : base.array(),
                base == null ? 0 : base.offset(), payload, acc.count(), scratch);
    }

    public static void reduce(DataType dt, ReduceOp op, Object acc, int a, Object in, int b, int n) {
        if (n == 0) {
            return;
        }
        if (a != b && n >= STAGE_MIN && dt != DataType.FLOAT16 && dt != DataType.BFLOAT16) {
            staged(dt, op, acc, a, in, b, n);
            return;
        }
        kernel(dt, op, acc, a, in, b, n);
    }

    /**
     * {@code acc[a..a+n) = op(acc[a..a+n), in[b..b+n))} for {@code a != b}, through two thread-local blocks at
     * offset 0, so that the kernel runs its same-index loop (see the class comment): three bulk copies and one
     * vectorised loop per block, 1.75x faster than the scalar loop on 8,192 floats ({@code ReductionsBenchmark},
     * docs/performance.md). When {@code acc} and {@code in} are one array, a block is no longer than the distance
     * between the two ranges, so the result is the element-by-element loop's even if they overlap.
     */
    private static void staged(DataType dt, ReduceOp op, Object acc, int a, Object in, int b, int n) {
        int block = BLOCK_BYTES / dt.sizeBytes();
        if (acc == in) {
            block = Math.min(block, Math.abs(a - b));
        }
        Object[] scratch = SCRATCH.get();
        int k = blocks(scratch, dt);
        Object x = scratch[k];
        Object y = scratch[k + 1];
        for (int done = 0; done < n; done += block) {
            int m = Math.min(block, n - done);
            System.arraycopy(acc, a + done, x, 0, m);
            System.arraycopy(in, b + done, y, 0, m);
            kernel(dt, op, x, 0, y, 0, m);
            System.arraycopy(x, 0, acc, a + done, m);
        }
    }

    /**
     * {@code acc[a..a+n) = op(base[c..c+n), in)} for the next {@code n} elements of {@code in} at its position (in
     * its byte order; it is advanced past them); {@code base} null means {@code acc}'s own values ({@code c} is then
     * ignored). Where {@code base} is {@code acc}'s own array the ranges must not overlap unless {@code c == a}.
     * What a receive posted with an operator does with the bytes it takes from a socket buffer: through the two
     * blocks of {@link #staged}, the payload read straight into one and the accumulator's (or the base's) elements
     * copied into the other, one vectorised loop and one copy back per block, three copies of each element in all
     * where reading the payload into an array and reducing that (staged) took five. {@code scratch} (an array of the
     * type with room for {@code n}) serves FLOAT16 and BFLOAT16, which are not staged.
     */
    public static void reduceFrom(DataType dt, ReduceOp op, Object acc, int a, Object base, int c,
                                  java.nio.ByteBuffer in, int n, Object scratch) {
        if (n == 0) {
            return;
        }
        if (dt == DataType.FLOAT16 || dt == DataType.BFLOAT16) {
            new Buf(dt, scratch, 0, n).readFrom(in);
            if (base != null) {
                System.arraycopy(base, c, acc, a, n);
            }
            kernel(dt, op, acc, a, scratch, 0, n);
            return;
        }
        Object[] blocks = SCRATCH.get();
        int k = blocks(blocks, dt);
        Object x = blocks[k];
        Object y = blocks[k + 1];
        int block = BLOCK_BYTES / dt.sizeBytes();
        Object from = base != null ? base : acc;
        int at = base != null ? c : a;
        for (int done = 0; done < n; done += block) {
            int m = Math.min(block, n - done);
            new Buf(dt, y, 0, m).readFrom(in);
            System.arraycopy(from, at + done, x, 0, m);
            kernel(dt, op, x, 0, y, 0, m);
            System.arraycopy(x, 0, acc, a + done, m);
        }
    }

    /** The index in this thread's {@link #SCRATCH} of {@code dt}'s two blocks (the second at +1), made on first use. */
    private static int blocks(Object[] scratch, DataType dt) {
        int k = 2 * dt.ordinal();
        if (scratch[k] == null) {
            scratch[k] = dt.newArray(BLOCK_BYTES / dt.sizeBytes());
            scratch[k + 1] = dt.newArray(BLOCK_BYTES / dt.sizeBytes());
        }
        return k;
    }

    private static void kernel(DataType dt, ReduceOp op, Object acc, int a, Object in, int b, int n) {
        switch (dt) {
            case FLOAT32: f32(op, (float[]) acc, a, (float[]) in, b, n); break;
            case FLOAT64: f64(op, (double[]) acc, a, (double[]) in, b, n); break;
            case FLOAT16: f16(op, (short[]) acc, a, (short[]) in, b, n, false); break;
            case BFLOAT16: f16(op, (short[]) acc, a, (short[]) in, b, n, true); break;
            case INT8: i8(op, (byte[]) acc, a, (byte[]) in, b, n, false); break;
            case UINT8: i8(op, (byte[]) acc, a, (byte[]) in, b, n, true); break;
            case INT32: i32(op, (int[]) acc, a, (int[]) in, b, n); break;
            case INT64: i64(op, (long[]) acc, a, (long[]) in, b, n); break;
            default: throw new AssertionError(dt);
        }
    }

    private static void f32(ReduceOp op, float[] x, int a, float[] y, int b, int n) {
        switch (op) {
            case SUM: case AVG:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] += y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] += y[b + i];
                }
                break;
            case PRODUCT:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] *= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] *= y[b + i];
                }
                break;
            case MIN:
                if (a == b) {
                    for (int i = a; i < a + n; i++) { float v = y[i]; if (v < x[i]) x[i] = v; }
                } else {
                    for (int i = 0; i < n; i++) { float v = y[b + i]; if (v < x[a + i]) x[a + i] = v; }
                }
                break;
            case MAX:
                if (a == b) {
                    for (int i = a; i < a + n; i++) { float v = y[i]; if (v > x[i]) x[i] = v; }
                } else {
                    for (int i = 0; i < n; i++) { float v = y[b + i]; if (v > x[a + i]) x[a + i] = v; }
                }
                break;
            default: throw unsupported(op, DataType.FLOAT32);
        }
    }

    private static void f64(ReduceOp op, double[] x, int a, double[] y, int b, int n) {
        switch (op) {
            case SUM: case AVG:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] += y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] += y[b + i];
                }
                break;
            case PRODUCT:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] *= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] *= y[b + i];
                }
                break;
            case MIN:
                if (a == b) {
                    for (int i = a; i < a + n; i++) { double v = y[i]; if (v < x[i]) x[i] = v; }
                } else {
                    for (int i = 0; i < n; i++) { double v = y[b + i]; if (v < x[a + i]) x[a + i] = v; }
                }
                break;
            case MAX:
                if (a == b) {
                    for (int i = a; i < a + n; i++) { double v = y[i]; if (v > x[i]) x[i] = v; }
                } else {
                    for (int i = 0; i < n; i++) { double v = y[b + i]; if (v > x[a + i]) x[a + i] = v; }
                }
                break;
            default: throw unsupported(op, DataType.FLOAT64);
        }
    }

    private static void f16(ReduceOp op, short[] x, int a, short[] y, int b, int n, boolean brain) {
        for (int i = 0; i < n; i++) {
            float p = brain ? bfloat16ToFloat(x[a + i]) : halfToFloat(x[a + i]);
            float q = brain ? bfloat16ToFloat(y[b + i]) : halfToFloat(y[b + i]);
            float r;
            switch (op) {
                case SUM: case AVG: r = p + q; break;
                case PRODUCT: r = p * q; break;
                case MIN: if (q < p) { x[a + i] = y[b + i]; } continue;
                case MAX: if (q > p) { x[a + i] = y[b + i]; } continue;
                default: throw unsupported(op, brain ? DataType.BFLOAT16 : DataType.FLOAT16);
            }
            x[a + i] = brain ? floatToBfloat16(r) : floatToHalf(r);
        }
    }

    private static void i8(ReduceOp op, byte[] x, int a, byte[] y, int b, int n, boolean unsigned) {
        switch (op) {
            case SUM: case AVG:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] += y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] += y[b + i];
                }
                break;
            case PRODUCT:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] *= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] *= y[b + i];
                }
                break;
            case MIN:
                if (unsigned) {
                    if (a == b) {
                        for (int i = a; i < a + n; i++) if ((y[i] & 0xFF) < (x[i] & 0xFF)) x[i] = y[i];
                    } else {
                        for (int i = 0; i < n; i++) if ((y[b + i] & 0xFF) < (x[a + i] & 0xFF)) x[a + i] = y[b + i];
                    }
                } else {
                    if (a == b) {
                        for (int i = a; i < a + n; i++) if (y[i] < x[i]) x[i] = y[i];
                    } else {
                        for (int i = 0; i < n; i++) if (y[b + i] < x[a + i]) x[a + i] = y[b + i];
                    }
                }
                break;
            case MAX:
                if (unsigned) {
                    if (a == b) {
                        for (int i = a; i < a + n; i++) if ((y[i] & 0xFF) > (x[i] & 0xFF)) x[i] = y[i];
                    } else {
                        for (int i = 0; i < n; i++) if ((y[b + i] & 0xFF) > (x[a + i] & 0xFF)) x[a + i] = y[b + i];
                    }
                } else {
                    if (a == b) {
                        for (int i = a; i < a + n; i++) if (y[i] > x[i]) x[i] = y[i];
                    } else {
                        for (int i = 0; i < n; i++) if (y[b + i] > x[a + i]) x[a + i] = y[b + i];
                    }
                }
                break;
            case BAND:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] &= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] &= y[b + i];
                }
                break;
            case BOR:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] |= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] |= y[b + i];
                }
                break;
            case BXOR:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] ^= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] ^= y[b + i];
                }
                break;
            default: throw new AssertionError(op);
        }
    }

    private static void i32(ReduceOp op, int[] x, int a, int[] y, int b, int n) {
        switch (op) {
            case SUM: case AVG:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] += y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] += y[b + i];
                }
                break;
            case PRODUCT:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] *= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] *= y[b + i];
                }
                break;
            case MIN:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] = Math.min(x[i], y[i]);
                } else {
                    for (int i = 0; i < n; i++) x[a + i] = Math.min(x[a + i], y[b + i]);
                }
                break;
            case MAX:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] = Math.max(x[i], y[i]);
                } else {
                    for (int i = 0; i < n; i++) x[a + i] = Math.max(x[a + i], y[b + i]);
                }
                break;
            case BAND:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] &= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] &= y[b + i];
                }
                break;
            case BOR:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] |= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] |= y[b + i];
                }
                break;
            case BXOR:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] ^= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] ^= y[b + i];
                }
                break;
            default: throw new AssertionError(op);
        }
    }

    private static void i64(ReduceOp op, long[] x, int a, long[] y, int b, int n) {
        switch (op) {
            case SUM: case AVG:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] += y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] += y[b + i];
                }
                break;
            case PRODUCT:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] *= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] *= y[b + i];
                }
                break;
            case MIN:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] = Math.min(x[i], y[i]);
                } else {
                    for (int i = 0; i < n; i++) x[a + i] = Math.min(x[a + i], y[b + i]);
                }
                break;
            case MAX:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] = Math.max(x[i], y[i]);
                } else {
                    for (int i = 0; i < n; i++) x[a + i] = Math.max(x[a + i], y[b + i]);
                }
                break;
            case BAND:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] &= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] &= y[b + i];
                }
                break;
            case BOR:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] |= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] |= y[b + i];
                }
                break;
            case BXOR:
                if (a == b) {
                    for (int i = a; i < a + n; i++) x[i] ^= y[i];
                } else {
                    for (int i = 0; i < n; i++) x[a + i] ^= y[b + i];
                }
                break;
            default: throw new AssertionError(op);
        }
    }

    /**
     * Finishes AVG: divides every element by {@code divisor} in the element type. Floating types round the exact
     * quotient once (as torch's {@code tensor / n} does; half types via float); integer types truncate toward
     * zero, UINT8 as unsigned.
     */
    public static void divide(Buf buf, int divisor) {
        if (buf.isMemory()) { // through an array, a block at a time
            int block = BLOCK_BYTES / buf.dtype().sizeBytes();
            Buf x = Buf.allocate(buf.dtype(), Math.min(block, buf.count()));
            for (int done = 0; done < buf.count(); done += block) {
                int m = Math.min(block, buf.count() - done);
                Buf b = x.slice(0, m);
                buf.copyTo(done, b, 0, m);
                divide(b, divisor);
                b.copyTo(buf, done);
            }
            return;
        }
        Object arr = buf.array();
        int o = buf.offset();
        int n = buf.count();
        switch (buf.dtype()) {
            case FLOAT32: {
                float[] x = (float[]) arr;
                float d = divisor;
                for (int i = 0; i < n; i++) x[o + i] /= d;
                break;
            }
            case FLOAT64: {
                double[] x = (double[]) arr;
                double d = divisor;
                for (int i = 0; i < n; i++) x[o + i] /= d;
                break;
            }
            case FLOAT16: {
                short[] x = (short[]) arr;
                for (int i = 0; i < n; i++) x[o + i] = floatToHalf(halfToFloat(x[o + i]) / divisor);
                break;
            }
            case BFLOAT16: {
                short[] x = (short[]) arr;
                for (int i = 0; i < n; i++) x[o + i] = floatToBfloat16(bfloat16ToFloat(x[o + i]) / divisor);
                break;
            }
            case INT8: {
                byte[] x = (byte[]) arr;
                for (int i = 0; i < n; i++) x[o + i] = (byte) (x[o + i] / divisor);
                break;
            }
            case UINT8: {
                byte[] x = (byte[]) arr;
                for (int i = 0; i < n; i++) x[o + i] = (byte) ((x[o + i] & 0xFF) / divisor);
                break;
            }
            case INT32: {
                int[] x = (int[]) arr;
                for (int i = 0; i < n; i++) x[o + i] /= divisor;
                break;
            }
            case INT64: {
                long[] x = (long[]) arr;
                for (int i = 0; i < n; i++) x[o + i] /= divisor;
                break;
            }
            default: throw new AssertionError(buf.dtype());
        }
    }

    private static IllegalArgumentException unsupported(ReduceOp op, DataType dt) {
        return new IllegalArgumentException("reduce op " + op + " is not defined for " + dt
                + ": bitwise ops need an integer type");
    }
}
