package io.jccl.pipeline;

import io.jccl.Tensor;
import io.jccl.buffer.Buf;

/**
 * A tensor as the array window the algorithms work on: an array tensor is its own window; a buffer tensor is
 * copied into a fresh array before the call ({@link #stage}) and back after it ({@link #unstage}).
 */
public final class Staging {
    private Staging() {
    }

    /** The elements of {@code t} as an array window: its array itself, or a copy of its buffer's content. */
    public static Buf stage(Tensor t) {
        if (!t.isBuffer()) {
            return new Buf(t.dtype(), t.array(), t.offset(), t.count());
        }
        Buf buf = Buf.allocate(t.dtype(), t.count());
        buf.readFrom(t.byteBuffer());
        return buf;
    }

    /** Writes a staged copy back into a buffer tensor; a no-op for an array tensor (staged as itself). */
    public static void unstage(Tensor t, Buf staged) {
        if (t.isBuffer()) {
            staged.writeTo(t.byteBuffer());
        }
    }
}
