package io.jccl.transport;

/**
 * A received message: its header and its payload, an array of the header's dtype owned by the receiver, holding
 * {@code header.payloadCount()} elements from index 0.
 */
public final class Frame {
    private final FrameHeader header;
    private final Object payload;

    public Frame(FrameHeader header, Object payload) {
        this.header = header;
        this.payload = payload;
    }

    public FrameHeader header() {
        return header;
    }

    public Object payload() {
        return payload;
    }
}
