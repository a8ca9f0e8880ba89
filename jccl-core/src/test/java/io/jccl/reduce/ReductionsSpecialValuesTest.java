package io.jccl.reduce;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * SUM, MIN and MAX of float32 and float64 on special elements (NaN payloads, signed zeros, infinities), against bits
 * written down here rather than against {@link io.jccl.reference.ReferenceModel} (which calls {@link Reductions}
 * itself). The expectations follow {@link Reductions}' documented rule, which is gloo's ({@code std::min} and
 * {@code std::max}): MIN is {@code in < acc ? in : acc} and MAX {@code acc < in ? in : acc}, so a NaN on either
 * side and a tie of -0.0 and 0.0 keep the accumulated value, bit for bit; SUM is IEEE addition (whose NaN's sign and
 * payload the platform chooses: only NaN-ness is checked there). Every path of {@link Reductions} is taken: the
 * same-index loop, different offsets below and above {@link Reductions#STAGE_MIN} (staged), a {@link Buf}, and a
 * byte buffer in both byte orders ({@link Reductions#reduceFrom}); the loops are warmed first, so that the compiled
 * (vectorised) code, not only the interpreter, most likely gives the answers.
 */
class ReductionsSpecialValuesTest {

    /** The bits of the special values of one type. */
    private record Special(long one, long pz, long nz, long pinf, long ninf, long nanA, long nanB, long max) {
    }

    private static final Special F32 = new Special(0x3f800000L, 0L, 0x80000000L, 0x7f800000L, 0xff800000L,
            0x7fc01234L /* a quiet NaN with a payload */, 0xffc0abcdL /* a negative one */, 0x7f7fffffL);
    private static final Special F64 = new Special(0x3ff0000000000000L, 0L, 0x8000000000000000L,
            0x7ff0000000000000L, 0xfff0000000000000L, 0x7ff8000000001234L, 0xfff800000000abcdL, 0x7fefffffffffffffL);

    enum Type {
        FLOAT32(DataType.FLOAT32, F32), FLOAT64(DataType.FLOAT64, F64);

        final DataType dt;
        final Special s;

        Type(DataType dt, Special s) {
            this.dt = dt;
            this.s = s;
        }
    }

    @BeforeAll
    static void warmUp() {
        for (Type t : Type.values()) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MIN, ReduceOp.MAX}) {
                Object acc = t.dt.newArray(300);
                Object in = t.dt.newArray(300);
                for (int i = 0; i < 300; i++) {
                    java.lang.reflect.Array.set(acc, i, t.dt == DataType.FLOAT32 ? (Object) (float) i : (double) i);
                    java.lang.reflect.Array.set(in, i, t.dt == DataType.FLOAT32 ? (Object) (float) -i : (double) -i);
                }
                for (int k = 0; k < 20_000; k++) {
                    Reductions.reduce(t.dt, op, acc, 0, in, 0, 256);
                    Reductions.reduce(t.dt, op, acc, 1, in, 3, 256);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Type.class)
    void minShouldKeepTheAccumulatedValueOnANaNOrATieOfZeros(Type t) {
        Special s = t.s;
        ReduceOp op = ReduceOp.MIN;
        assertOp(t, op, s.nanA, s.one, s.nanA);
        assertOp(t, op, s.one, s.nanA, s.one);
        assertOp(t, op, s.nanA, s.nanB, s.nanA);
        assertOp(t, op, s.nanB, s.nanA, s.nanB);
        assertOp(t, op, s.nanA, s.ninf, s.nanA);
        assertOp(t, op, s.ninf, s.nanA, s.ninf);
        assertOp(t, op, s.nz, s.pz, s.nz);
        assertOp(t, op, s.pz, s.nz, s.pz);
        assertOp(t, op, s.pinf, s.ninf, s.ninf);
        assertOp(t, op, s.ninf, s.one, s.ninf);
        assertOp(t, op, s.one, s.pinf, s.one);
        assertOp(t, op, s.pinf, s.one, s.one);
        assertOp(t, op, s.pz, s.one, s.pz);
    }

    @ParameterizedTest
    @EnumSource(Type.class)
    void maxShouldKeepTheAccumulatedValueOnANaNOrATieOfZeros(Type t) {
        Special s = t.s;
        ReduceOp op = ReduceOp.MAX;
        assertOp(t, op, s.nanA, s.one, s.nanA);
        assertOp(t, op, s.one, s.nanA, s.one);
        assertOp(t, op, s.nanA, s.nanB, s.nanA);
        assertOp(t, op, s.nanB, s.nanA, s.nanB);
        assertOp(t, op, s.pinf, s.nanA, s.pinf);
        assertOp(t, op, s.nanA, s.pinf, s.nanA);
        assertOp(t, op, s.nz, s.pz, s.nz);
        assertOp(t, op, s.pz, s.nz, s.pz);
        assertOp(t, op, s.ninf, s.pinf, s.pinf);
        assertOp(t, op, s.pinf, s.one, s.pinf);
        assertOp(t, op, s.one, s.ninf, s.one);
        assertOp(t, op, s.ninf, s.one, s.one);
        assertOp(t, op, s.nz, s.one, s.one);
    }

    @ParameterizedTest
    @EnumSource(Type.class)
    void sumShouldAddAsIeeeDoes(Type t) {
        Special s = t.s;
        ReduceOp op = ReduceOp.SUM;
        assertOp(t, op, s.nz, s.nz, s.nz);
        assertOp(t, op, s.nz, s.pz, s.pz);
        assertOp(t, op, s.pz, s.nz, s.pz);
        assertOp(t, op, s.pinf, s.one, s.pinf);
        assertOp(t, op, s.one, s.ninf, s.ninf);
        assertOp(t, op, s.ninf, s.ninf, s.ninf);
        assertOp(t, op, s.ninf, s.max, s.ninf);
        assertOp(t, op, s.max, s.max, s.pinf); // overflow
        assertOp(t, op, s.max | signBit(t), s.max | signBit(t), s.ninf);
        assertNaN(t, op, s.pinf, s.ninf);
        assertNaN(t, op, s.ninf, s.pinf);
        assertNaN(t, op, s.nanA, s.one);
        assertNaN(t, op, s.one, s.nanA);
        assertNaN(t, op, s.nanA, s.ninf);
        assertNaN(t, op, s.pz, s.nanB);
    }

    private static long signBit(Type t) {
        return t.dt == DataType.FLOAT32 ? 0x80000000L : 0x8000000000000000L;
    }

    private static void assertOp(Type t, ReduceOp op, long acc, long in, long expected) {
        for (Map.Entry<String, long[]> e : results(t, op, acc, in).entrySet()) {
            for (long got : e.getValue()) {
                assertEquals(hex(t, expected), hex(t, got), () -> t + " " + op + "(acc=" + hex(t, acc) + ", in="
                        + hex(t, in) + ") through " + e.getKey());
            }
        }
    }

    private static void assertNaN(Type t, ReduceOp op, long acc, long in) {
        for (Map.Entry<String, long[]> e : results(t, op, acc, in).entrySet()) {
            for (long got : e.getValue()) {
                assertTrue(isNaN(t, got), () -> t + " " + op + "(acc=" + hex(t, acc) + ", in=" + hex(t, in)
                        + ") through " + e.getKey() + ": " + hex(t, got) + ", not a NaN");
            }
        }
    }

    /** By path: the bits of every element of op(acc, in) over a range filled with {@code acc} and {@code in}. */
    private static Map<String, long[]> results(Type t, ReduceOp op, long acc, long in) {
        Map<String, long[]> out = new LinkedHashMap<>();
        DataType dt = t.dt;
        // same index (vectorisable loop); different offsets, short (element loop) and long (staged)
        int[][] shapes = {{3, 3, 100}, {1, 4, 10}, {1, 4, 100}, {0, 0, 1}};
        for (int[] sh : shapes) {
            Object x = filled(t, acc, sh[0] + sh[2] + 2);
            Object y = filled(t, in, sh[1] + sh[2] + 2);
            Reductions.reduce(dt, op, x, sh[0], y, sh[1], sh[2]);
            out.put("reduce(a=" + sh[0] + ", b=" + sh[1] + ", n=" + sh[2] + ")", bits(t, x, sh[0], sh[2]));
        }
        Object x = filled(t, acc, 100);
        Reductions.reduce(op, new Buf(dt, x, 0, 100), new Buf(dt, filled(t, in, 100), 0, 100));
        out.put("reduce(Buf, Buf)", bits(t, x, 0, 100));
        for (ByteOrder order : new ByteOrder[] {ByteOrder.BIG_ENDIAN, ByteOrder.LITTLE_ENDIAN}) {
            ByteBuffer bytes = ByteBuffer.allocateDirect(100 * dt.sizeBytes()).order(order);
            new Buf(dt, filled(t, in, 100), 0, 100).writeTo(bytes);
            bytes.flip();
            Object into = filled(t, acc, 102);
            Reductions.reduceFrom(dt, op, into, 2, null, 0, bytes, 100, null);
            out.put("reduceFrom(" + order + ")", bits(t, into, 2, 100));
        }
        return out;
    }

    private static Object filled(Type t, long v, int n) {
        if (t.dt == DataType.FLOAT32) {
            float[] a = new float[n];
            java.util.Arrays.fill(a, Float.intBitsToFloat((int) v));
            return a;
        }
        double[] a = new double[n];
        java.util.Arrays.fill(a, Double.longBitsToDouble(v));
        return a;
    }

    private static long[] bits(Type t, Object a, int from, int n) {
        long[] b = new long[n];
        for (int i = 0; i < n; i++) {
            b[i] = t.dt == DataType.FLOAT32 ? Float.floatToRawIntBits(((float[]) a)[from + i]) & 0xffffffffL
                    : Double.doubleToRawLongBits(((double[]) a)[from + i]);
        }
        return b;
    }

    private static boolean isNaN(Type t, long bits) {
        return t.dt == DataType.FLOAT32 ? Float.isNaN(Float.intBitsToFloat((int) bits))
                : Double.isNaN(Double.longBitsToDouble(bits));
    }

    private static String hex(Type t, long bits) {
        double v = t.dt == DataType.FLOAT32 ? Float.intBitsToFloat((int) bits) : Double.longBitsToDouble(bits);
        return "0x" + Long.toHexString(bits) + " (" + v + ")";
    }
}
