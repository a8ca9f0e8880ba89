package io.jccl;

import java.util.Objects;

/**
 * One point-to-point operation of a {@link Communicator#batchIsendIrecv batch} (torch's {@code P2POp}): a send of
 * a tensor to a peer, or a receive of one from it, with a tag.
 */
public final class P2POp {
    private final boolean send;
    private final Tensor tensor;
    private final int peer;
    private final int tag;

    private P2POp(boolean send, Tensor tensor, int peer, int tag) {
        this.send = send;
        this.tensor = Objects.requireNonNull(tensor, "tensor");
        this.peer = peer;
        this.tag = tag;
    }

    /** A send of {@code tensor} to {@code dst} with {@code tag}. */
    public static P2POp isend(Tensor tensor, int dst, int tag) {
        return new P2POp(true, tensor, dst, tag);
    }

    /** A receive into {@code tensor} from {@code src} with {@code tag}. */
    public static P2POp irecv(Tensor tensor, int src, int tag) {
        return new P2POp(false, tensor, src, tag);
    }

    /** Whether this is a send (else a receive). */
    public boolean isSend() {
        return send;
    }

    /** The tensor sent, or received into. */
    public Tensor tensor() {
        return tensor;
    }

    /** The rank sent to or received from. */
    public int peer() {
        return peer;
    }

    /** The tag; a send and its receive must agree on it. */
    public int tag() {
        return tag;
    }

    @Override
    public String toString() {
        return (send ? "isend to " : "irecv from ") + peer + " (tag " + tag + ", " + tensor + ")";
    }
}
