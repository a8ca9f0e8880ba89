package io.jccl.reference;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.reduce.HalfFloats;

import java.util.SplittableRandom;

/**
 * Deterministic inputs for verification: rank r's tensor depends only on (seed, rank, dtype, op, count), so any
 * process can regenerate any rank's input. Floating values are Gaussian; PRODUCT uses values near 1 so that
 * products of up to 64 factors stay finite and normal; integers are drawn from a small range for PRODUCT and
 * from the type's range (int8, uint8) or [-10^6, 10^6] otherwise.
 */
public final class InputGenerator {
    private InputGenerator() {
    }

    public static Buf generate(DataType dt, ReduceOp op, int count, long seed, int rank) {
        SplittableRandom rnd = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + rank * 1_000_003L
                + dt.id() * 101L + (op == null ? 0 : op.id() * 7L));
        boolean product = op == ReduceOp.PRODUCT;
        Buf b = Buf.allocate(dt, count);
        Object a = b.array();
        for (int i = 0; i < count; i++) {
            double g = gaussian(rnd);
            double f = product ? 1.0 + 0.25 * g : g;
            switch (dt) {
                case FLOAT32: ((float[]) a)[i] = (float) f; break;
                case FLOAT64: ((double[]) a)[i] = f; break;
                case FLOAT16: ((short[]) a)[i] = HalfFloats.floatToHalf((float) f); break;
                case BFLOAT16: ((short[]) a)[i] = HalfFloats.floatToBfloat16((float) f); break;
                case INT8:
                case UINT8: ((byte[]) a)[i] = (byte) (product ? rnd.nextInt(-3, 4) : rnd.nextInt(256)); break;
                case INT32: ((int[]) a)[i] = product ? rnd.nextInt(-3, 4) : rnd.nextInt(-1_000_000, 1_000_001); break;
                case INT64: ((long[]) a)[i] = product ? rnd.nextInt(-3, 4) : rnd.nextLong(-1L << 40, 1L << 40); break;
                default: throw new AssertionError(dt);
            }
        }
        return b;
    }

    private static double gaussian(SplittableRandom rnd) {
        // Box-Muller; SplittableRandom has no nextGaussian on Java 17
        double u = 1.0 - rnd.nextDouble();
        double v = rnd.nextDouble();
        return Math.sqrt(-2.0 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    }
}
