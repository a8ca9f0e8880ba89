package io.jccl.reduce;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Array;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The staged path of {@link Reductions#reduce} (different offsets, {@link Reductions#STAGE_MIN} elements or more)
 * against the definition, one element at a time in ascending order (each a call of one element, which never
 * stages): every type, every operator it has, offsets and lengths around the block size, and one array reduced
 * into itself with overlapping ranges.
 */
class ReductionsTest {
    private static final int[] LENGTHS = {Reductions.STAGE_MIN, 100, 1023, 1024, 2047, 2048, 2049, 8192, 10_000};

    @Test
    void shouldMatchTheElementLoopForEveryTypeOperatorAndOffset() {
        Random random = new Random(42);
        int cases = 0;
        for (DataType dt : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                if (op.ordinal() >= ReduceOp.BAND.ordinal() && dt.isFloatingPoint()) {
                    continue; // bitwise operators are refused for floating types (tested elsewhere)
                }
                for (int n : LENGTHS) {
                    int a = random.nextInt(50);
                    int b = a + 1 + random.nextInt(50);
                    Object acc = fill(dt, a + n + 7, random);
                    Object in = fill(dt, b + n + 7, random);
                    Object expected = copy(acc);
                    for (int i = 0; i < n; i++) {
                        Reductions.reduce(dt, op, expected, a + i, in, b + i, 1);
                    }
                    Reductions.reduce(dt, op, acc, a, in, b, n);
                    assertSame(dt, expected, acc, dt + " " + op + " n=" + n + " a=" + a + " b=" + b);
                    cases++;
                }
            }
        }
        assertTrue(cases > 300, "cases run: " + cases);
    }

    /**
     * {@link Reductions#reduceFrom}, what a posted receive does with a socket buffer's bytes: the element loop's
     * result for every type and operator, with and without a base, in both byte orders, the buffer advanced past
     * exactly the elements read.
     */
    @Test
    void shouldReduceFromAByteBufferAsTheElementLoopDoes() {
        Random random = new Random(11);
        for (DataType dt : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                if (op.ordinal() >= ReduceOp.BAND.ordinal() && dt.isFloatingPoint()) {
                    continue;
                }
                for (int n : new int[] {1, 100, 2049, 10_000}) {
                    for (boolean withBase : new boolean[] {false, true}) {
                        java.nio.ByteOrder order = random.nextBoolean() ? java.nio.ByteOrder.BIG_ENDIAN
                                : java.nio.ByteOrder.LITTLE_ENDIAN;
                        int a = random.nextInt(50);
                        int c = random.nextInt(50);
                        Object acc = fill(dt, a + n + 7, random);
                        Object base = fill(dt, c + n + 7, random);
                        Object in = fill(dt, n, random);
                        java.nio.ByteBuffer bytes = java.nio.ByteBuffer.allocateDirect(3 + n * dt.sizeBytes() + 5)
                                .order(order);
                        bytes.position(3);
                        new io.jccl.buffer.Buf(dt, in, 0, n).writeTo(bytes);
                        bytes.position(3);
                        Object expected = copy(acc);
                        if (withBase) {
                            System.arraycopy(base, c, expected, a, n);
                        }
                        for (int i = 0; i < n; i++) {
                            Reductions.reduce(dt, op, expected, a + i, in, i, 1);
                        }
                        Reductions.reduceFrom(dt, op, acc, a, withBase ? base : null, c, bytes, n, dt.newArray(n));
                        String what = dt + " " + op + " n=" + n + " base " + withBase + " " + order;
                        assertSame(dt, expected, acc, what);
                        assertEquals(3 + n * dt.sizeBytes(), bytes.position(), what);
                    }
                }
            }
        }
    }

    @Test
    void shouldKeepTheElementLoopsMeaningWhenOneArrayOverlapsItself() {
        Random random = new Random(7);
        for (DataType dt : new DataType[] {DataType.FLOAT32, DataType.INT64, DataType.INT8}) {
            for (int shift : new int[] {-3000, -5, -1, 1, 5, 3000}) {
                int n = 6000;
                int a = 4000;
                int b = a + shift;
                Object x = fill(dt, 14_000, random);
                Object expected = copy(x);
                for (int i = 0; i < n; i++) {
                    Reductions.reduce(dt, ReduceOp.SUM, expected, a + i, expected, b + i, 1);
                }
                Reductions.reduce(dt, ReduceOp.SUM, x, a, x, b, n);
                assertSame(dt, expected, x, dt + " shift " + shift);
            }
        }
    }

    private static Object fill(DataType dt, int length, Random random) {
        Object arr = dt.newArray(length);
        for (int i = 0; i < length; i++) {
            switch (dt) {
                case FLOAT32: Array.setFloat(arr, i, (float) random.nextGaussian()); break;
                case FLOAT64: Array.setDouble(arr, i, random.nextGaussian()); break;
                case FLOAT16: Array.setShort(arr, i, HalfFloats.floatToHalf((float) random.nextGaussian())); break;
                case BFLOAT16: Array.setShort(arr, i, HalfFloats.floatToBfloat16((float) random.nextGaussian())); break;
                case INT8: case UINT8: Array.setByte(arr, i, (byte) random.nextInt()); break;
                case INT32: Array.setInt(arr, i, random.nextInt()); break;
                case INT64: Array.setLong(arr, i, random.nextLong()); break;
                default: throw new AssertionError(dt);
            }
        }
        return arr;
    }

    private static Object copy(Object arr) {
        Object c = Array.newInstance(arr.getClass().getComponentType(), Array.getLength(arr));
        System.arraycopy(arr, 0, c, 0, Array.getLength(arr));
        return c;
    }

    private static void assertSame(DataType dt, Object expected, Object actual, String what) {
        assertEquals(Array.getLength(expected), Array.getLength(actual));
        switch (dt) {
            case FLOAT32: assertArrayEquals((float[]) expected, (float[]) actual, what); break;
            case FLOAT64: assertArrayEquals((double[]) expected, (double[]) actual, what); break;
            case FLOAT16: case BFLOAT16: assertArrayEquals((short[]) expected, (short[]) actual, what); break;
            case INT8: case UINT8: assertArrayEquals((byte[]) expected, (byte[]) actual, what); break;
            case INT32: assertArrayEquals((int[]) expected, (int[]) actual, what); break;
            case INT64: assertArrayEquals((long[]) expected, (long[]) actual, what); break;
            default: throw new AssertionError(dt);
        }
    }
}
