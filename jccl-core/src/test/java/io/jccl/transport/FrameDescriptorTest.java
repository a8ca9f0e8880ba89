package io.jccl.transport;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FrameDescriptorTest {
    private static final FrameHeader H = new FrameHeader(FrameDescriptor.TYPE_DATA, 3, 2, 4, 1, 7, -1,
            1L << 40, 123_456_789_012L, 9, 1025, 6);

    @Test
    void shouldRoundTripEveryField() {
        byte[] b = FrameDescriptor.encode(H);
        assertEquals(FrameDescriptor.HEADER_LENGTH, b.length);
        FrameHeader d = FrameDescriptor.decode(b);
        assertEquals(H.toString(), d.toString());
    }

    @Test
    void shouldRejectWrongMagicVersionLengthAndShortInput() {
        byte[] b = FrameDescriptor.encode(H);
        b[FrameDescriptor.MAGIC_OFFSET] ^= 1;
        assertTrue(assertThrows(FrameFormatException.class, () -> FrameDescriptor.decode(b)).getMessage()
                .contains("bad frame magic"));
        byte[] v = FrameDescriptor.encode(H);
        v[FrameDescriptor.VERSION_OFFSET] = 9;
        assertTrue(assertThrows(FrameFormatException.class, () -> FrameDescriptor.decode(v)).getMessage()
                .contains("unsupported frame version: expected=1, actual=9"));
        byte[] n = FrameDescriptor.encode(H);
        ByteBuffer.wrap(n).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(FrameDescriptor.PAYLOAD_COUNT_OFFSET, -5);
        assertTrue(assertThrows(FrameFormatException.class, () -> FrameDescriptor.decode(n)).getMessage()
                .contains("negative payload count"));
        assertTrue(assertThrows(FrameFormatException.class, () -> FrameDescriptor.decode(new byte[10]))
                .getMessage().contains("insufficient capacity"));
    }
}
