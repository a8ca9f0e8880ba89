package io.jccl;

import io.jccl.buffer.Buf;
import io.jccl.buffer.Bufs;
import io.jccl.reference.InputGenerator;
import io.jccl.reference.ReferenceModel;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tree and halving-doubling allreduces: exact where the order cannot matter (integers, MIN, MAX, bitwise),
 * within the reordering bound for float sums, and the same bits on every rank. Bruck's allgather: identical to the
 * ring's. Over every transport, world sizes 1 to 9 (non-powers of two included).
 */
class LogarithmicAlgorithmsTest {

    @net.jqwik.api.Provide
    net.jqwik.api.Arbitrary<Algorithm> reducing() {
        return net.jqwik.api.Arbitraries.of(Algorithm.TREE, Algorithm.HALVING_DOUBLING);
    }

    @Property(tries = 40)
    void bruckAllGatherShouldEqualTheRing(@ForAll @IntRange(min = 1, max = 9) int world,
                                          @ForAll @IntRange(min = 0, max = 50) int block, @ForAll DataType dtype,
                                          @ForAll long seed, @ForAll TransportKind kind) throws Exception {
        Assume.that(kind == TransportKind.LOCAL || world <= 5); // a rejected try, not a passing one
        List<Buf> in = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            in.add(InputGenerator.generate(dtype, ReduceOp.SUM, block, seed, r));
        }
        Buf expected = ReferenceModel.allGather(in);
        List<RankHarness.Outcome<Buf>> out = RankHarness.run(kind, world, Duration.ofSeconds(20), comm -> {
            Buf o = Buf.allocate(dtype, block * world);
            Buf mine = in.get(comm.rank());
            comm.allGather(Tensor.ofArray(dtype, mine.array(), 0, block), Tensor.ofArray(dtype, o.array(), 0,
                    block * world), CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.BRUCK));
            return o;
        });
        for (RankHarness.Outcome<Buf> o : out) {
            assertNull(o.error);
            assertTrue(Bufs.bitEqual(o.value, expected));
        }
    }

    @Property(tries = 120)
    void shouldAgreeWithTheRing(@ForAll("reducing") Algorithm algorithm,
                                @ForAll @IntRange(min = 1, max = 9) int world,
                                @ForAll @IntRange(min = 0, max = 300) int count,
                                @ForAll DataType dtype, @ForAll ReduceOp op, @ForAll long seed,
                                @ForAll TransportKind kind) throws Exception {
        Assume.that(op.supports(dtype) && (kind == TransportKind.LOCAL || world <= 5));
        List<Buf> in = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            in.add(InputGenerator.generate(dtype, op, count, seed, r));
        }
        Buf ring = ReferenceModel.allReduce(in, op);
        List<RankHarness.Outcome<Buf>> out = RankHarness.run(kind, world, Duration.ofSeconds(20), comm -> {
            Buf mine = in.get(comm.rank()).copyOf(0, count);
            comm.allReduce(Tensor.ofArray(dtype, mine.array(), 0, count), op,
                    CollectiveOptions.DEFAULT.withAlgorithm(algorithm));
            return mine;
        });
        boolean orderFree = !dtype.isFloatingPoint() || op == ReduceOp.MIN || op == ReduceOp.MAX;
        for (RankHarness.Outcome<Buf> o : out) {
            assertNull(o.error);
            assertTrue(Bufs.bitEqual(o.value, out.get(0).value), "every rank holds the same bits");
            if (orderFree) {
                assertTrue(Bufs.bitEqual(o.value, ring), algorithm + " " + dtype + " " + op + " must be exact");
            } else {
                // floating point summed or multiplied in another order: within the rounding bound of both orders
                double u = unitRoundoff(dtype);
                double tiny = world * smallestSubnormal(dtype);
                for (int i = 0; i < count; i++) {
                    double r = value(ring, i);
                    double v = value(o.value, i);
                    if (!Double.isFinite(r)) {
                        continue; // the reference overflowed: no bound to hold the other order to
                    }
                    double bound;
                    double largestPartial; // the magnitude a partial result of any order may reach
                    if (op == ReduceOp.PRODUCT) {
                        bound = 2.01 * (world - 1) * u * Math.abs(r);
                        largestPartial = 1;
                        for (Buf x : in) {
                            largestPartial *= Math.max(1, Math.abs(value(x, i)));
                        }
                    } else {
                        double sumAbs = 0;
                        for (Buf x : in) {
                            sumAbs += Math.abs(value(x, i));
                        }
                        bound = 2 * (world - 1) * u / (1 - (world - 1) * u) * sumAbs;
                        if (op == ReduceOp.AVG) {
                            bound = bound / world + 2 * u * Math.abs(r);
                        }
                        largestPartial = sumAbs;
                    }
                    if (!Double.isFinite(v)) {
                        // only an overflow that this order reaches and the ring's does not: a partial result within
                        // the rounding bound of the type's largest value
                        double reach = Math.max(Math.abs(r) + bound, largestPartial * (1 + 2 * world * u));
                        int element = i;
                        assertTrue(reach >= maxFinite(dtype), () -> algorithm + " " + dtype + " " + op + " element "
                                + element + ": " + v + " where the ring has " + r + " and no partial result can "
                                + "overflow (" + reach + " < " + maxFinite(dtype) + ")");
                        continue;
                    }
                    bound += tiny;
                    double d = Math.abs(v - r);
                    assertTrue(d <= bound, algorithm + " " + dtype + " " + op + " element " + i + ": |" + algorithm
                            + " - ring| = " + d + " > " + bound);
                }
            }
        }
    }

    /** The unit roundoff of one rounding to {@code dtype} (each step of a reduction rounds once). */
    private static double unitRoundoff(DataType dtype) {
        switch (dtype) {
            case FLOAT64: return 0x1p-53;
            case FLOAT32: return 0x1p-24;
            case FLOAT16: return 0x1p-11;
            case BFLOAT16: return 0x1p-8;
            default: throw new AssertionError(dtype);
        }
    }

    /** The largest finite value of {@code dtype}. */
    private static double maxFinite(DataType dtype) {
        switch (dtype) {
            case FLOAT64: return Double.MAX_VALUE;
            case FLOAT32: return Float.MAX_VALUE;
            case FLOAT16: return 65504;
            case BFLOAT16: return 0x1.fep127;
            default: throw new AssertionError(dtype);
        }
    }

    /** The spacing of {@code dtype}'s subnormals: what gradual underflow may lose in one step. */
    private static double smallestSubnormal(DataType dtype) {
        switch (dtype) {
            case FLOAT64: return Double.MIN_VALUE;
            case FLOAT32: return Float.MIN_VALUE;
            case FLOAT16: return 0x1p-24;
            case BFLOAT16: return 0x1p-133;
            default: throw new AssertionError(dtype);
        }
    }

    private static double value(Buf b, int i) {
        switch (b.dtype()) {
            case FLOAT32: return ((float[]) b.array())[b.offset() + i];
            case FLOAT64: return ((double[]) b.array())[b.offset() + i];
            case FLOAT16: return io.jccl.reduce.HalfFloats.halfToFloat(((short[]) b.array())[b.offset() + i]);
            case BFLOAT16: return io.jccl.reduce.HalfFloats.bfloat16ToFloat(((short[]) b.array())[b.offset() + i]);
            default: throw new AssertionError(b.dtype());
        }
    }
}
