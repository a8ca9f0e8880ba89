package io.jccl.verify;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rigorous bound against gloo's results, and what it must not let through. */
class ComparisonTest {
    private static Buf floats(float... v) {
        return new Buf(DataType.FLOAT32, v, 0, v.length);
    }

    @Test
    void aSumWithinTheBoundOfAnotherOrderPasses() {
        Comparison c = Comparison.of(floats(0f), floats(1f), ReduceOp.SUM, List.of(floats(1e8f), floats(1f),
                floats(-1e8f)), 0);
        assertFalse(c.identical());
        assertTrue(c.withinBound(), "|1 - 0| is within 2 gamma (1e8 + 1 + 1e8)");
    }

    /** An infinite input made the bound infinite, and a NaN difference counted as infinite: inf <= inf passed. */
    @Test
    void aValueThatIsNotFiniteOnOneSideOnlyFails() {
        List<Buf> inputs = List.of(floats(Float.POSITIVE_INFINITY), floats(1f));
        assertFalse(Comparison.of(floats(0f), floats(Float.POSITIVE_INFINITY), ReduceOp.SUM, inputs, 0).withinBound());
        assertFalse(Comparison.of(floats(Float.NaN), floats(Float.POSITIVE_INFINITY), ReduceOp.SUM, inputs, 0)
                .withinBound());
        assertTrue(Comparison.of(floats(Float.POSITIVE_INFINITY), floats(Float.POSITIVE_INFINITY), ReduceOp.SUM,
                inputs, 0).withinBound());
    }
}
