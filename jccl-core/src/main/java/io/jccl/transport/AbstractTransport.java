package io.jccl.transport;

import java.nio.charset.StandardCharsets;

/**
 * What every transport of a full mesh repeats: its rank, size and name, the {@link Inbox} its received frames go
 * to and the {@link ArrayPool} their payloads come from, the reads of that inbox ({@link #receive},
 * {@link #peekHeader}, {@link #pendingAbort}), {@link #release}, {@link #interrupt}, and {@link #abortPeers}, which
 * encodes the abort frame once and hands it to {@link #sendAbort} for each peer.
 *
 * <p>A transport that must make progress while it waits (one without reader threads) overrides the reads.
 */
public abstract class AbstractTransport implements Transport {
    /** This rank. */
    protected final int rank;
    /** The number of ranks. */
    protected final int size;
    /** Where this rank's received frames go. */
    protected final Inbox inbox;
    /** The payload arrays of received frames. */
    protected final ArrayPool pool;
    private final String name;

    protected AbstractTransport(String name, int rank, int size, Inbox inbox, ArrayPool pool) {
        this.name = name;
        this.rank = rank;
        this.size = size;
        this.inbox = inbox;
        this.pool = pool;
    }

    @Override
    public final int rank() {
        return rank;
    }

    @Override
    public final int size() {
        return size;
    }

    @Override
    public final String name() {
        return name;
    }

    /**
     * Whether this rank's own {@link #close()} has begun: a subclass's close sets it first. From then on a send fails
     * with {@link #closedException()}, and so does a receive with nothing left to return ({@link #receive}): no peer
     * is blamed for this rank's close, and no receive waits until its deadline for a frame nobody will bring.
     */
    protected volatile boolean closing;

    /** What a call on this transport fails with once it is {@link #closing}: "rank r: the ... transport is closed". */
    protected io.jccl.JcclException closedException() {
        return new io.jccl.JcclException("rank " + rank + ": the " + name + " transport is closed", null);
    }

    /** Fails with {@link #closedException()} once this transport is {@link #closing}. */
    protected void ensureOpen() {
        if (closing) {
            throw closedException();
        }
    }

    /**
     * {@inheritDoc} On a closed transport, what had arrived before (a frame, an abort, a peer's goodbye) is still
     * returned; else it fails saying the transport is closed ({@link #closing}).
     */
    @Override
    public Frame receive(int src, int stream, long deadlineNanos) throws InterruptedException {
        if (closing) {
            Frame f = inbox.poll(src, stream);
            if (f != null) {
                return f;
            }
            throw closedException();
        }
        return inbox.receive(src, stream, deadlineNanos);
    }

    @Override
    public FrameHeader peekHeader(int src, int stream) {
        return inbox.peekHeader(src, stream);
    }

    @Override
    public Frame pendingAbort(int src, int stream) {
        return inbox.pendingAbort(src, stream);
    }

    @Override
    public void release(Frame frame) {
        pool.giveBack(frame);
    }

    @Override
    public void forget(int communicatorId) {
        inbox.forget(communicatorId);
    }

    /** Puts {@code abort} on this rank's own queues and ends a wait in the {@link #arena() arena}, if any. */
    @Override
    public void interrupt(Frame abort) {
        inbox.deliver(rank, abort);
        SharedArena a = arena();
        if (a != null) {
            a.interrupt();
        }
    }

    /** Encodes the abort frame once ({@link #abortFrame}) and hands it to {@link #sendAbort} for each other peer. */
    @Override
    public void abortPeers(int[] peers, FrameHeader header, String reason) {
        Frame abort = abortFrame(header, reason);
        for (int peer : peers) {
            if (peer != rank) {
                sendAbort(peer, abort);
            }
        }
    }

    /**
     * Best effort, never blocks for long: delivers {@code abort} (from {@link #abortFrame}, whose payload is a
     * {@code byte[]} of UINT8) to {@code peer}, another rank; logs rather than throws when it cannot.
     */
    protected abstract void sendAbort(int peer, Frame abort);

    /** The abort frame of {@code header} carrying {@code reason}: a UTF-8 payload of UINT8, the header's step kept. */
    protected static Frame abortFrame(FrameHeader header, String reason) {
        byte[] bytes = reason.getBytes(StandardCharsets.UTF_8);
        return new Frame(header.withStep(header.step(), bytes.length), bytes);
    }
}
