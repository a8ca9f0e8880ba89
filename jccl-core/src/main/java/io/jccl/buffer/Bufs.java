package io.jccl.buffer;

import java.util.Arrays;

/** Comparisons of buffers by their bits. */
public final class Bufs {
    private Bufs() {
    }

    /** Whether both hold the same dtype, count and bytes. */
    public static boolean bitEqual(Buf a, Buf b) {
        if (a.dtype() != b.dtype() || a.count() != b.count()) {
            return false;
        }
        if (a.isMemory()) {
            a = a.copyOf(0, a.count());
        }
        if (b.isMemory()) {
            b = b.copyOf(0, b.count());
        }
        int n = a.count();
        switch (a.dtype()) {
            case FLOAT32: {
                float[] x = (float[]) a.array();
                float[] y = (float[]) b.array();
                for (int i = 0; i < n; i++) {
                    if (Float.floatToRawIntBits(x[a.offset() + i]) != Float.floatToRawIntBits(y[b.offset() + i])) {
                        return false;
                    }
                }
                return true;
            }
            case FLOAT64: {
                double[] x = (double[]) a.array();
                double[] y = (double[]) b.array();
                for (int i = 0; i < n; i++) {
                    if (Double.doubleToRawLongBits(x[a.offset() + i]) != Double.doubleToRawLongBits(y[b.offset() + i])) {
                        return false;
                    }
                }
                return true;
            }
            case FLOAT16:
            case BFLOAT16:
                return Arrays.equals((short[]) a.array(), a.offset(), a.offset() + n, (short[]) b.array(), b.offset(),
                        b.offset() + n);
            case INT8:
            case UINT8:
                return Arrays.equals((byte[]) a.array(), a.offset(), a.offset() + n, (byte[]) b.array(), b.offset(),
                        b.offset() + n);
            case INT32:
                return Arrays.equals((int[]) a.array(), a.offset(), a.offset() + n, (int[]) b.array(), b.offset(),
                        b.offset() + n);
            case INT64:
                return Arrays.equals((long[]) a.array(), a.offset(), a.offset() + n, (long[]) b.array(), b.offset(),
                        b.offset() + n);
            default:
                throw new AssertionError(a.dtype());
        }
    }
}
