package io.jccl.transport;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.reduce.Reductions;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.concurrent.locks.LockSupport;

/**
 * A receive posted before its frame arrives (MPI's {@code MPI_Irecv}): where the payload goes ({@link #destination},
 * copied, or reduced into it with {@link #op}) and which headers it takes ({@link #accepts}). A transport whose
 * reader sees the frame's header while the receive is posted writes the payload straight from its socket buffer
 * into the destination ({@link #place}), one pass over each byte after the kernel's copy; otherwise the frame is
 * queued as usual and handed to this receive whole ({@link Frame#isPlaced()} false), and its caller copies it.
 *
 * <p>Life: posted ({@link Transport#post}), claimed by a reader that fills it, then done with a result
 * ({@link #result}): the placed frame, a whole frame, or an abort. {@link #cancel} ends it without a result; after
 * {@code cancel} returns no byte is written into the destination any more (the reader drains the rest of the frame),
 * which is what makes a timed-out or failed call safe to leave while its peer is still sending.
 *
 * <p>Posts of one (source, stream) are matched with its frames in the order posted.
 */
public abstract class PostedReceive {
    private static final int WAITING = 0;
    private static final int FILLING = 1;
    private static final int DONE = 2;

    private final Buf destination;
    private final ReduceOp op;
    /** With {@link #op}: the destination becomes {@code base op payload} (base left as it is); null: the destination's own values. */
    private final Buf base;
    /** Guarded by this. */
    private int state = WAITING;
    private volatile Frame result;
    private volatile Thread waiter;
    private boolean posted;

    /**
     * @param destination where the payload goes: exactly {@code destination.count()} elements
     * @param op          reduce the payload into the destination with it, or null to copy
     */
    protected PostedReceive(Buf destination, ReduceOp op) {
        this(destination, op, null);
    }

    /**
     * @param destination where the payload goes: exactly {@code destination.count()} elements
     * @param op          reduce the payload with it, or null to copy
     * @param base        with {@code op}: the destination becomes {@code base op payload}, element by element, and
     *                    {@code base} (as many elements, not overlapping the destination) is only read; null: the
     *                    payload is reduced into the destination's own values
     */
    protected PostedReceive(Buf destination, ReduceOp op, Buf base) {
        if (base != null && (op == null || base.count() != destination.count())) {
            throw new IllegalArgumentException("a base needs an operator and as many elements as the destination");
        }
        this.destination = destination;
        this.op = op;
        this.base = base;
    }

    /** What the payload is reduced with into the destination ({@link #PostedReceive(Buf, ReduceOp, Buf)}), or null. */
    public final Buf base() {
        return base;
    }

    /** Whether a frame with header {@code h} (never an abort) is the one this receive waits for, as it expects it. */
    protected abstract boolean accepts(FrameHeader h);

    public final Buf destination() {
        return destination;
    }

    public final ReduceOp op() {
        return op;
    }

    /** The frame this receive ended with, or null while it waits (and after {@link #cancel}). */
    public final Frame result() {
        return result;
    }

    /** Marks this receive as registered with a transport; false if it already was. */
    final boolean markPosted() {
        if (posted) {
            return false;
        }
        posted = true;
        return true;
    }

    /** Whether it still waits for a frame (neither claimed by a reader nor done). */
    final synchronized boolean isWaiting() {
        return state == WAITING;
    }

    /** A reader takes this receive to fill it with the frame whose header it has read; false if it is done. */
    final synchronized boolean claim() {
        if (state != WAITING) {
            return false;
        }
        state = FILLING;
        return true;
    }

    /** Ends this receive with {@code frame} (a whole frame or an abort) unless it is done; whether it was not. */
    final boolean complete(Frame frame) {
        synchronized (this) {
            if (state == DONE) {
                return false;
            }
            state = DONE;
            result = frame;
        }
        Thread w = waiter;
        if (w != null) {
            LockSupport.unpark(w);
        }
        return true;
    }

    /**
     * The reader has placed every element of the frame with header {@code h}: the receive ends with a placed frame,
     * unless it was cancelled or aborted meanwhile.
     */
    final void finish(FrameHeader h) {
        complete(Frame.placed(h));
    }

    /**
     * Writes elements {@code [at, at + n)} of the payload, read from {@code src} at its position (in its byte order),
     * into the destination, copying or reducing ({@code Reductions.reduceFrom}); {@code scratch}, an array of the
     * dtype with room for {@code n} elements, is needed only to reduce FLOAT16 and BFLOAT16. Returns false, writing nothing, once this receive is cancelled or aborted; the
     * reader then drains the rest of the frame. Always advances {@code src} by the elements' bytes.
     */
    public final synchronized boolean place(ByteBuffer src, int at, int n, Object scratch) {
        DataType dt = destination.dtype();
        if (state != FILLING) {
            src.position(src.position() + n * dt.sizeBytes());
            return false;
        }
        if (op == null) {
            destination.slice(at, n).readFrom(src);
        } else {
            Reductions.reduceFrom(op, destination.slice(at, n), base == null ? null : base.slice(at, n), src, scratch);
        }
        return true;
    }

    /** What {@link #fill} returns once this receive is cancelled or aborted: it wrote nothing. */
    public static final int GIVEN_UP = -2;

    /**
     * Whether the payload's bytes, in little-endian order, can go from a socket straight into the destination
     * ({@link #fill}): a copy (no operator) into memory in that byte order.
     */
    public final boolean fillable() {
        return op == null && destination.isWireOrderMemory();
    }

    /**
     * Reads payload bytes from {@code channel} straight into {@code window}, a view of the destination's bytes
     * ({@link Buf#bytes()}) positioned where the next byte goes and limited to where this read may end, with no copy
     * in between: only for a {@link #fillable} receive. The read runs under this receive's lock, so that
     * {@link #cancel} waits for it and no byte lands after {@code cancel} returns; the caller must therefore ask only
     * for bytes the channel already holds (or use a non-blocking channel), or a cancel would wait for the peer.
     * Returns what the channel's read returned (-1 at end of stream), or {@link #GIVEN_UP}, reading nothing, once
     * this receive is cancelled or aborted; the reader then drains the rest of the frame.
     */
    public final synchronized int fill(ReadableByteChannel channel, ByteBuffer window) throws IOException {
        if (state != FILLING) {
            return GIVEN_UP;
        }
        return channel.read(window);
    }

    /**
     * Copies the remaining payload bytes of {@code src} into {@code window} (as {@link #fill(ReadableByteChannel,
     * ByteBuffer)}, for bytes the reader had to wait for in its own buffer): only for a {@link #fillable} receive.
     * Returns false, writing nothing, once this receive is cancelled or aborted. Always consumes {@code src}.
     */
    public final synchronized boolean fill(ByteBuffer src, ByteBuffer window) {
        if (state != FILLING) {
            src.position(src.limit());
            return false;
        }
        window.put(src);
        return true;
    }

    /**
     * Ends this receive without a result if it is not done: no byte is written into the destination after this
     * returns. Called by the caller that gives up (a timeout, an abort, a failure elsewhere in its call).
     */
    public final void cancel() {
        synchronized (this) {
            if (state == DONE) {
                return;
            }
            state = DONE;
        }
    }

    /** Waits for the result until {@code deadlineNanos}; null then. */
    final Frame await(long deadlineNanos) throws InterruptedException {
        Frame r = result;
        if (r != null) {
            return r;
        }
        waiter = Thread.currentThread();
        try {
            while ((r = result) == null) {
                long wait = deadlineNanos - System.nanoTime();
                if (wait <= 0) {
                    return null;
                }
                LockSupport.parkNanos(this, wait);
                if (Thread.interrupted()) {
                    throw new InterruptedException();
                }
            }
            return r;
        } finally {
            waiter = null;
        }
    }
}
