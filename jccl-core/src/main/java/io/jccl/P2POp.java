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

    /**
     * A send of {@code tensor} to {@code dst} with {@code tag}, for {@link Communicator#isend}.
     *
     * @param tensor the data to send
     * @param dst the receiving rank, not the sender (checked when the batch starts it)
     * @param tag the receiver's receive must pass the same tag
     * @return the operation
     * @throws NullPointerException when {@code tensor} is null
     */
    public static P2POp isend(Tensor tensor, int dst, int tag) {
        return new P2POp(true, tensor, dst, tag);
    }

    /**
     * A receive into {@code tensor} from {@code src} with {@code tag}, for {@link Communicator#irecv}.
     *
     * @param tensor overwritten with the message; the count and dtype {@code src} sends
     * @param src the sending rank, not the receiver (checked when the batch starts it)
     * @param tag the tag {@code src} passes to its send
     * @return the operation
     * @throws NullPointerException when {@code tensor} is null
     */
    public static P2POp irecv(Tensor tensor, int src, int tag) {
        return new P2POp(false, tensor, src, tag);
    }

    /** {@return whether this is a send (else a receive)} */
    public boolean isSend() {
        return send;
    }

    /** {@return the tensor sent, or received into} */
    public Tensor tensor() {
        return tensor;
    }

    /** {@return the rank sent to or received from} */
    public int peer() {
        return peer;
    }

    /** {@return the tag} A send and its receive must agree on it. */
    public int tag() {
        return tag;
    }

    @Override
    public String toString() {
        return (send ? "isend to " : "irecv from ") + peer + " (tag " + tag + ", " + tensor + ")";
    }
}
