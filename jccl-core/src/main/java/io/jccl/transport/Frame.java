package io.jccl.transport;

/**
 * A received message: its header and its payload, an array of the header's dtype owned by the receiver, holding
 * {@code header.payloadCount()} elements from index 0.
 */
public final class Frame {
    private final FrameHeader header;
    private final Object payload;
    private final boolean departure;
    private final boolean placed;

    public Frame(FrameHeader header, Object payload) {
        this(header, payload, false, false);
    }

    private Frame(FrameHeader header, Object payload, boolean departure, boolean placed) {
        this.header = header;
        this.payload = payload;
        this.departure = departure;
        this.placed = placed;
    }

    /**
     * A frame whose payload a transport has already written into a {@link PostedReceive}'s destination: it has no
     * payload of its own ({@link #payload()} is null).
     */
    public static Frame placed(FrameHeader header) {
        return new Frame(header, null, false, true);
    }

    /** Whether the payload is already in the posted receive's destination (see {@link #placed}). */
    public boolean isPlaced() {
        return placed;
    }

    /** The same frame with another header (a source renumbered), its payload and kind kept. */
    public Frame withHeader(FrameHeader h) {
        return new Frame(h, payload, departure, placed);
    }

    /**
     * The abort frame a transport makes when {@code peer} closed its end cleanly (it said goodbye): a receive from
     * that peer returns it once the peer's earlier frames are read, and a shared-memory wait treats it as a
     * failure only if the peer left before reaching the point waited for ({@link #isDeparture()}).
     */
    public static Frame departed(int peer) {
        Frame f = peerGone(peer, "rank " + peer + " closed its communicator");
        return new Frame(f.header, f.payload, true, false);
    }

    /** Whether this frame says that its source closed cleanly (see {@link #departed}), not that it failed. */
    public boolean isDeparture() {
        return departure;
    }

    /**
     * An abort frame a transport makes itself when {@code peer} is lost or leaves: it names {@code peer} as its
     * source and carries {@code reason}; it reaches every communicator of the transport.
     */
    public static Frame peerGone(int peer, String reason) {
        byte[] r = reason.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        return new Frame(new FrameHeader(FrameDescriptor.TYPE_ABORT, 0, io.jccl.DataType.UINT8.id(), 0xFF, 0xFF, peer,
                -1, -1, 0, 0, r.length, 0), r);
    }

    /** The header of the goodbye frame {@code source} sends when it closes cleanly. */
    public static FrameHeader goodbye(int source) {
        return new FrameHeader(FrameDescriptor.TYPE_GOODBYE, 0, io.jccl.DataType.UINT8.id(), 0xFF, 0xFF, source, -1, -1,
                0, 0, 0, 0);
    }

    public FrameHeader header() {
        return header;
    }

    public Object payload() {
        return payload;
    }
}
