package io.jccl.verify;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.reduce.HalfFloats;

import java.util.List;

/**
 * How far jccl's output is from the reference: bit identity, largest absolute difference, largest difference in
 * units in the last place, and whether every element lies within the rigorous bound for reordered reductions.
 *
 * <p>The bound, per element, for a reduction of P values x_r computed in two different orders: SUM differs by at
 * most 2 gamma(P-1) sum|x_r| with gamma(k) = k u / (1 - k u) and u the type's unit roundoff (2^-24 float32,
 * 2^-53 float64, 2^-11 float16, 2^-8 bfloat16); PRODUCT by 2 gamma(P-1) prod|x_r| (1 + gamma(P-1)); AVG by the
 * SUM bound / P plus one rounding of each quotient; both plus P times the smallest subnormal for underflow. MIN,
 * MAX and integer types must be identical. See docs/verification.md.
 */
public final class Comparison {
    private final boolean identical;
    private final double maxAbs;
    private final long maxUlp;
    private final boolean withinBound;

    private Comparison(boolean identical, double maxAbs, long maxUlp, boolean withinBound) {
        this.identical = identical;
        this.maxAbs = maxAbs;
        this.maxUlp = maxUlp;
        this.withinBound = withinBound;
    }

    public boolean identical() {
        return identical;
    }

    public double maxAbs() {
        return maxAbs;
    }

    public long maxUlp() {
        return maxUlp;
    }

    public boolean withinBound() {
        return withinBound;
    }

    /** Merges the comparisons of several ranks. */
    public Comparison merge(Comparison o) {
        return new Comparison(identical && o.identical, Math.max(maxAbs, o.maxAbs), Math.max(maxUlp, o.maxUlp),
                withinBound && o.withinBound);
    }

    public static Comparison identicalResult() {
        return new Comparison(true, 0, 0, true);
    }

    /**
     * Compares {@code actual} with {@code expected}. {@code inputs} are the P inputs of a reduction (element i of
     * the output reduces element {@code i + inputOffset} of each) or null for data movement, where only identity
     * counts.
     */
    public static Comparison of(Buf actual, Buf expected, ReduceOp op, List<Buf> inputs, int inputOffset) {
        if (actual.count() != expected.count() || actual.dtype() != expected.dtype()) {
            return new Comparison(false, Double.POSITIVE_INFINITY, Long.MAX_VALUE, false);
        }
        DataType dt = actual.dtype();
        boolean identical = true;
        boolean within = true;
        double maxAbs = 0;
        long maxUlp = 0;
        for (int i = 0; i < actual.count(); i++) {
            long ba = bits(actual, i);
            long be = bits(expected, i);
            if (ba == be) {
                continue;
            }
            identical = false;
            double a = value(actual, i);
            double e = value(expected, i);
            double diff = Math.abs(a - e);
            if (Double.isNaN(diff)) {
                diff = Double.POSITIVE_INFINITY;
            }
            maxAbs = Math.max(maxAbs, diff);
            maxUlp = Math.max(maxUlp, ulpDistance(dt, ba, be));
            // a value that is not finite on either side must be the same bits: an infinite input makes the bound
            // infinite, and inf <= inf passed a NaN or 0 where gloo has inf (or the reverse)
            boolean finite = !Double.isNaN(a) && !Double.isInfinite(a) && !Double.isNaN(e) && !Double.isInfinite(e);
            if (!finite || !(diff <= bound(dt, op, inputs, inputOffset + i, Math.abs(e)))) {
                within = false;
            }
        }
        return new Comparison(identical, maxAbs, maxUlp, identical || within);
    }

    private static double bound(DataType dt, ReduceOp op, List<Buf> inputs, int index, double magnitude) {
        if (!dt.isFloatingPoint() || inputs == null || op == ReduceOp.MIN || op == ReduceOp.MAX) {
            return 0;
        }
        int p = inputs.size();
        double u = unitRoundoff(dt);
        double gamma = (p - 1) * u / (1 - (p - 1) * u);
        double tiny = p * smallestSubnormal(dt);
        if (op == ReduceOp.PRODUCT) {
            double prod = 1;
            for (Buf x : inputs) {
                prod *= Math.abs(value(x, index));
            }
            return 2 * gamma * prod * (1 + gamma) + tiny;
        }
        double sum = 0;
        for (Buf x : inputs) {
            sum += Math.abs(value(x, index));
        }
        double b = 2 * gamma * sum + tiny;
        if (op == ReduceOp.AVG) {
            b = b / p + 2 * u * magnitude + tiny;
        }
        return b;
    }

    static double unitRoundoff(DataType dt) {
        switch (dt) {
            case FLOAT32: return 0x1p-24;
            case FLOAT64: return 0x1p-53;
            case FLOAT16: return 0x1p-11;
            case BFLOAT16: return 0x1p-8;
            default: return 0;
        }
    }

    private static double smallestSubnormal(DataType dt) {
        switch (dt) {
            case FLOAT32: return Float.MIN_VALUE;
            case FLOAT64: return Double.MIN_VALUE;
            case FLOAT16: return 0x1p-24;
            case BFLOAT16: return 0x1p-133;
            default: return 0;
        }
    }

    /** Element i as a double (UINT8 unsigned, half types widened). */
    static double value(Buf b, int i) {
        Object a = b.array();
        int j = b.offset() + i;
        switch (b.dtype()) {
            case FLOAT32: return ((float[]) a)[j];
            case FLOAT64: return ((double[]) a)[j];
            case FLOAT16: return HalfFloats.halfToFloat(((short[]) a)[j]);
            case BFLOAT16: return HalfFloats.bfloat16ToFloat(((short[]) a)[j]);
            case INT8: return ((byte[]) a)[j];
            case UINT8: return ((byte[]) a)[j] & 0xFF;
            case INT32: return ((int[]) a)[j];
            case INT64: return ((long[]) a)[j];
            default: throw new AssertionError(b.dtype());
        }
    }

    /** Element i's bits (floating types) or value (integer types) as a long. */
    private static long bits(Buf b, int i) {
        Object a = b.array();
        int j = b.offset() + i;
        switch (b.dtype()) {
            case FLOAT32: return Float.floatToRawIntBits(((float[]) a)[j]);
            case FLOAT64: return Double.doubleToRawLongBits(((double[]) a)[j]);
            case FLOAT16:
            case BFLOAT16: return ((short[]) a)[j];
            case INT8: return ((byte[]) a)[j];
            case UINT8: return ((byte[]) a)[j] & 0xFF;
            case INT32: return ((int[]) a)[j];
            case INT64: return ((long[]) a)[j];
            default: throw new AssertionError(b.dtype());
        }
    }

    /** Distance in representable values between two bit patterns of a floating type (value distance for ints). */
    private static long ulpDistance(DataType dt, long a, long b) {
        switch (dt) {
            case FLOAT32: return Math.abs(ordered32((int) a) - ordered32((int) b));
            case FLOAT64: {
                long d = ordered64(a) - ordered64(b);
                return d == Long.MIN_VALUE ? Long.MAX_VALUE : Math.abs(d);
            }
            case FLOAT16:
            case BFLOAT16: return Math.abs(ordered16((int) a) - ordered16((int) b));
            default: {
                long d = a - b;
                return d == Long.MIN_VALUE ? Long.MAX_VALUE : Math.abs(d);
            }
        }
    }

    private static long ordered32(int bits) {
        return bits < 0 ? (long) Integer.MIN_VALUE - bits : bits;
    }

    private static long ordered64(long bits) {
        return bits < 0 ? Long.MIN_VALUE - bits : bits;
    }

    private static long ordered16(int bits) {
        int b = bits & 0xFFFF;
        return (b & 0x8000) != 0 ? -(long) (b & 0x7FFF) : b;
    }
}
