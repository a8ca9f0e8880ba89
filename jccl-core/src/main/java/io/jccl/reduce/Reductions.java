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
 * {@link #divide} finishes it. The operator switch sits outside each loop so the loops vectorise.
 */
public final class Reductions {
    private Reductions() {
    }

    /** {@code acc = op(acc, in)} element-wise over {@code acc.count()} elements; {@code in} must be as long. */
    public static void reduce(ReduceOp op, Buf acc, Buf in) {
        reduce(acc.dtype(), op, acc.array(), acc.offset(), in.array(), in.offset(), acc.count());
    }

    public static void reduce(DataType dt, ReduceOp op, Object acc, int a, Object in, int b, int n) {
        if (n == 0) {
            return;
        }
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
                for (int i = 0; i < n; i++) x[a + i] += y[b + i];
                break;
            case PRODUCT:
                for (int i = 0; i < n; i++) x[a + i] *= y[b + i];
                break;
            case MIN:
                for (int i = 0; i < n; i++) { float v = y[b + i]; if (v < x[a + i]) x[a + i] = v; }
                break;
            case MAX:
                for (int i = 0; i < n; i++) { float v = y[b + i]; if (v > x[a + i]) x[a + i] = v; }
                break;
            default: throw unsupported(op, DataType.FLOAT32);
        }
    }

    private static void f64(ReduceOp op, double[] x, int a, double[] y, int b, int n) {
        switch (op) {
            case SUM: case AVG:
                for (int i = 0; i < n; i++) x[a + i] += y[b + i];
                break;
            case PRODUCT:
                for (int i = 0; i < n; i++) x[a + i] *= y[b + i];
                break;
            case MIN:
                for (int i = 0; i < n; i++) { double v = y[b + i]; if (v < x[a + i]) x[a + i] = v; }
                break;
            case MAX:
                for (int i = 0; i < n; i++) { double v = y[b + i]; if (v > x[a + i]) x[a + i] = v; }
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
                for (int i = 0; i < n; i++) x[a + i] += y[b + i];
                break;
            case PRODUCT:
                for (int i = 0; i < n; i++) x[a + i] *= y[b + i];
                break;
            case MIN:
                if (unsigned) {
                    for (int i = 0; i < n; i++) if ((y[b + i] & 0xFF) < (x[a + i] & 0xFF)) x[a + i] = y[b + i];
                } else {
                    for (int i = 0; i < n; i++) if (y[b + i] < x[a + i]) x[a + i] = y[b + i];
                }
                break;
            case MAX:
                if (unsigned) {
                    for (int i = 0; i < n; i++) if ((y[b + i] & 0xFF) > (x[a + i] & 0xFF)) x[a + i] = y[b + i];
                } else {
                    for (int i = 0; i < n; i++) if (y[b + i] > x[a + i]) x[a + i] = y[b + i];
                }
                break;
            case BAND:
                for (int i = 0; i < n; i++) x[a + i] &= y[b + i];
                break;
            case BOR:
                for (int i = 0; i < n; i++) x[a + i] |= y[b + i];
                break;
            case BXOR:
                for (int i = 0; i < n; i++) x[a + i] ^= y[b + i];
                break;
            default: throw new AssertionError(op);
        }
    }

    private static void i32(ReduceOp op, int[] x, int a, int[] y, int b, int n) {
        switch (op) {
            case SUM: case AVG:
                for (int i = 0; i < n; i++) x[a + i] += y[b + i];
                break;
            case PRODUCT:
                for (int i = 0; i < n; i++) x[a + i] *= y[b + i];
                break;
            case MIN:
                for (int i = 0; i < n; i++) x[a + i] = Math.min(x[a + i], y[b + i]);
                break;
            case MAX:
                for (int i = 0; i < n; i++) x[a + i] = Math.max(x[a + i], y[b + i]);
                break;
            case BAND:
                for (int i = 0; i < n; i++) x[a + i] &= y[b + i];
                break;
            case BOR:
                for (int i = 0; i < n; i++) x[a + i] |= y[b + i];
                break;
            case BXOR:
                for (int i = 0; i < n; i++) x[a + i] ^= y[b + i];
                break;
            default: throw new AssertionError(op);
        }
    }

    private static void i64(ReduceOp op, long[] x, int a, long[] y, int b, int n) {
        switch (op) {
            case SUM: case AVG:
                for (int i = 0; i < n; i++) x[a + i] += y[b + i];
                break;
            case PRODUCT:
                for (int i = 0; i < n; i++) x[a + i] *= y[b + i];
                break;
            case MIN:
                for (int i = 0; i < n; i++) x[a + i] = Math.min(x[a + i], y[b + i]);
                break;
            case MAX:
                for (int i = 0; i < n; i++) x[a + i] = Math.max(x[a + i], y[b + i]);
                break;
            case BAND:
                for (int i = 0; i < n; i++) x[a + i] &= y[b + i];
                break;
            case BOR:
                for (int i = 0; i < n; i++) x[a + i] |= y[b + i];
                break;
            case BXOR:
                for (int i = 0; i < n; i++) x[a + i] ^= y[b + i];
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
