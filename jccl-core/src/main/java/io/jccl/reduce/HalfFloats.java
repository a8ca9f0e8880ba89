package io.jccl.reduce;

/**
 * Conversions between {@code float} and the two 16-bit floating formats, rounding to nearest, ties to even.
 *
 * <p>This is how gloo (and torch on the CPU) compute on half types: widen both operands to float, operate once,
 * round back. Java 17 has no {@code Float.floatToFloat16}, so the conversions are written out here.
 */
public final class HalfFloats {
    private HalfFloats() {
    }

    /** IEEE binary16 bits to float (exact). */
    public static float halfToFloat(short bits) {
        int h = bits & 0xFFFF;
        int sign = (h & 0x8000) << 16;
        int exp = (h >>> 10) & 0x1F;
        int mant = h & 0x3FF;
        if (exp == 0x1F) {
            return Float.intBitsToFloat(sign | 0x7F800000 | (mant << 13));
        }
        if (exp == 0) {
            if (mant == 0) {
                return Float.intBitsToFloat(sign);
            }
            // subnormal: mant * 2^-24
            float v = mant * 0x1p-24f;
            return sign != 0 ? -v : v;
        }
        return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
    }

    /** Float to IEEE binary16 bits, round to nearest even; overflow gives infinity, NaN stays NaN (quiet). */
    public static short floatToHalf(float f) {
        int x = Float.floatToRawIntBits(f);
        int sign = (x >>> 16) & 0x8000;
        int abs = x & 0x7FFFFFFF;
        if (abs >= 0x7F800000) {
            // infinity or NaN
            return (short) (sign | 0x7C00 | (abs > 0x7F800000 ? 0x200 | ((abs >>> 13) & 0x3FF) : 0));
        }
        if (abs >= 0x477FF000) {
            // rounds to >= 65520: overflow to infinity
            return (short) (sign | 0x7C00);
        }
        if (abs < 0x38800000) {
            // result is subnormal or zero: value = abs * 2^24 rounded to an integer count of 2^-24
            float scaled = Float.intBitsToFloat(abs) * 0x1p24f; // exact: scaling by a power of two
            int m = (int) Math.rint(scaled); // rint rounds half to even
            return (short) (sign | m);
        }
        // normal: rebias exponent, round 23-bit mantissa to 10 bits
        int e = ((abs >>> 23) - 112) << 10;
        int mant = abs & 0x7FFFFF;
        int h = e | (mant >>> 13);
        int rest = mant & 0x1FFF;
        if (rest > 0x1000 || (rest == 0x1000 && (h & 1) != 0)) {
            h++; // may carry into the exponent, which is the right answer
        }
        return (short) (sign | h);
    }

    /** bfloat16 bits to float (exact). */
    public static float bfloat16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** Float to bfloat16 bits, round to nearest even; NaN becomes the quiet NaN 0x7FC0 (as torch does). */
    public static short floatToBfloat16(float f) {
        if (Float.isNaN(f)) {
            return (short) 0x7FC0;
        }
        int x = Float.floatToRawIntBits(f);
        int lsb = (x >>> 16) & 1;
        return (short) ((x + 0x7FFF + lsb) >>> 16);
    }
}
