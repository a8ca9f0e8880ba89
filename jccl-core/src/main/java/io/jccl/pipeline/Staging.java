package io.jccl.pipeline;

import io.jccl.Tensor;
import io.jccl.buffer.Buf;

import java.nio.ByteBuffer;

/**
 * A tensor as the window the algorithms work on. An array tensor is its own window. A direct buffer tensor is its
 * own window too ({@link Buf#over}) where the transport has no shared arena (TCP, and TCP with shared memory
 * between hosts' ranks): the transport sends from it and receives into it as it is. Any other buffer tensor is
 * copied into a fresh array before the call ({@link #stage}) and back after it ({@link #unstage}).
 */
final class Staging {
    /** Whether direct buffers are worked on in place: the transport has no shared arena of all ranks. */
    private final boolean inPlace;

    Staging(boolean inPlace) {
        this.inPlace = inPlace;
    }

    /** The elements of {@code t} as a window: its array or its direct buffer itself, or a copy of its buffer. */
    Buf stage(Tensor t) {
        if (!t.isBuffer()) {
            return new Buf(t.dtype(), t.array(), t.offset(), t.count());
        }
        ByteBuffer bytes = t.byteBuffer();
        if (inPlace && bytes.isDirect()) {
            return Buf.over(t.dtype(), bytes.slice().order(t.byteOrder()), 0, t.count());
        }
        Buf buf = Buf.allocate(t.dtype(), t.count());
        buf.readFrom(bytes);
        return buf;
    }

    /**
     * Whether {@link #stage} gives {@code t}'s own elements (an array, or a direct buffer worked on in place) rather
     * than a copy: then the window may serve every call on {@code t}, which is immutable.
     */
    boolean isView(Tensor t) {
        return !t.isBuffer() || (inPlace && t.byteBuffer().isDirect());
    }

    /** Writes a staged copy back into a buffer tensor; a no-op for a tensor worked on in place. */
    void unstage(Tensor t, Buf staged) {
        if (t.isBuffer() && !staged.isMemory()) {
            staged.writeTo(t.byteBuffer());
        }
    }
}
