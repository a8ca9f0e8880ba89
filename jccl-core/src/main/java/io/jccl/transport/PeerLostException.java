package io.jccl.transport;

/**
 * A transport cannot reach a peer any more (its process died, its connection broke, or it broke the protocol).
 * The collective layer turns it into a {@link io.jccl.PeerAbortedException} naming the peer.
 */
public final class PeerLostException extends RuntimeException {
    private final int peer;

    public PeerLostException(int peer, String reason, Throwable cause) {
        super(reason, cause);
        this.peer = peer;
    }

    public int peer() {
        return peer;
    }
}
