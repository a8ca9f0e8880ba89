package io.jccl.reduce;

import org.junit.jupiter.api.Test;

import java.math.BigDecimal;

import static org.junit.jupiter.api.Assertions.assertEquals;

class HalfFloatsTest {

    @Test
    void shouldRoundTripEveryHalf() {
        for (int h = 0; h < 0x10000; h++) {
            float f = HalfFloats.halfToFloat((short) h);
            if (Float.isNaN(f)) {
                assertEquals(0x7C00, HalfFloats.floatToHalf(f) & 0x7C00);
                continue;
            }
            assertEquals((short) h, HalfFloats.floatToHalf(f), "half 0x" + Integer.toHexString(h));
        }
    }

    @Test
    void shouldRoundMidpointsToEvenAndOthersToNearest() {
        for (int h = 0; h < 0x7BFF; h++) { // positive finite halves below the largest
            BigDecimal lo = new BigDecimal(HalfFloats.halfToFloat((short) h));
            BigDecimal hi = new BigDecimal(HalfFloats.halfToFloat((short) (h + 1)));
            float mid = lo.add(hi).divide(BigDecimal.valueOf(2)).floatValue(); // exact in float
            short even = (short) ((h & 1) == 0 ? h : h + 1);
            assertEquals(even, HalfFloats.floatToHalf(mid), "midpoint above 0x" + Integer.toHexString(h));
            assertEquals((short) h, HalfFloats.floatToHalf(Math.nextDown(mid)));
            assertEquals((short) (h + 1), HalfFloats.floatToHalf(Math.nextUp(mid)));
            assertEquals((short) (h | 0x8000), HalfFloats.floatToHalf(-Math.nextDown(mid)));
        }
        assertEquals((short) 0x7C00, HalfFloats.floatToHalf(65520f)); // rounds up to infinity
        assertEquals((short) 0x7BFF, HalfFloats.floatToHalf(Math.nextDown(65520f)));
    }

    @Test
    void shouldRoundBfloat16ToNearestEven() {
        for (int b = 0; b < 0x7F7F; b++) {
            float lo = HalfFloats.bfloat16ToFloat((short) b);
            float hi = HalfFloats.bfloat16ToFloat((short) (b + 1));
            float mid = Float.intBitsToFloat((Float.floatToRawIntBits(lo) + Float.floatToRawIntBits(hi)) >>> 1);
            short even = (short) ((b & 1) == 0 ? b : b + 1);
            assertEquals(even, HalfFloats.floatToBfloat16(mid));
            assertEquals((short) b, HalfFloats.floatToBfloat16(Math.nextDown(mid)));
            assertEquals((short) (b + 1), HalfFloats.floatToBfloat16(Math.nextUp(mid)));
        }
        assertEquals((short) 0x7FC0, HalfFloats.floatToBfloat16(Float.NaN));
    }
}
