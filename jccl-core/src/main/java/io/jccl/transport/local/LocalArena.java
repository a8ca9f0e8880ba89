package io.jccl.transport.local;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.reduce.Reductions;
import io.jccl.transport.AbstractArena;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.SharedArena;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The {@link SharedArena} of ranks that are threads of one JVM: exchange buffers are heap arrays (one per rank,
 * half and element type, made on first use), counters an {@link AtomicLongArray}. A peer's buffer is read with
 * {@link System#arraycopy} and reduced with the same kernels as a received frame.
 */
final class LocalArena {
    /** Bytes of one exchange buffer: {@code JCCL_LOCAL_ARENA_BYTES}, default 4 MiB. */
    static final String BYTES_ENV = "JCCL_LOCAL_ARENA_BYTES";
    static final int DEFAULT_BYTES = 4 << 20;

    private final int size;
    private final int bufferBytes;
    /** [(rank * 2 + half) * DataType count + dtype ordinal] */
    private final AtomicReferenceArray<Object> arrays;
    private final AtomicLongArray counters;
    /**
     * By rank: its two signature slots, encoded as a shared-memory segment's are ({@link FrameDescriptor}), half h
     * at {@code h * SLOT_BYTES}; published by the rank's counters like the exchange buffers.
     */
    private final ByteBuffer[] signatures;
    private static final int SLOT_BYTES = 64;
    private final AtomicReferenceArray<Buf> exposed;
    private final int oversubscribedSpins;

    LocalArena(int size, int bufferBytes, int oversubscribedSpins) {
        this.size = size;
        this.oversubscribedSpins = oversubscribedSpins;
        this.bufferBytes = bufferBytes;
        if (bufferBytes < 4096 || bufferBytes % 8 != 0) {
            throw new IllegalArgumentException("exchange buffer bytes (" + BYTES_ENV + ") must be a multiple of 8 of "
                    + "at least 4096: " + bufferBytes);
        }
        this.arrays = new AtomicReferenceArray<>(size * 2 * DataType.values().length);
        this.counters = new AtomicLongArray(size * SharedArena.COUNTERS);
        this.signatures = new ByteBuffer[size];
        for (int r = 0; r < size; r++) {
            signatures[r] = ByteBuffer.allocate(2 * SLOT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        }
        this.exposed = new AtomicReferenceArray<>(size);
    }

    SharedArena view(int rank) {
        return new View(rank);
    }

    private Object array(int r, int half, DataType dt) {
        int i = (r * 2 + half) * DataType.values().length + dt.ordinal();
        Object a = arrays.get(i);
        if (a == null) {
            a = dt.newArray(bufferBytes / dt.sizeBytes());
            if (!arrays.compareAndSet(i, null, a)) {
                a = arrays.get(i);
            }
        }
        return a;
    }

    private final class View extends AbstractArena {
        /** This rank's {@link #signatureSlot}s: views of its part of {@link #signatures}. */
        private final ByteBuffer[] slots = new ByteBuffer[2];

        View(int rank) {
            super(rank, size, size, oversubscribedSpins);
            for (int h = 0; h < 2; h++) {
                slots[h] = signatures[rank].slice(h * SLOT_BYTES, FrameDescriptor.HEADER_LENGTH)
                        .order(ByteOrder.LITTLE_ENDIAN);
            }
        }

        @Override
        public int bufferBytes() {
            return bufferBytes;
        }

        @Override
        public void enter() {
        }

        @Override
        public void exit() {
        }

        @Override
        public boolean canExpose() {
            return true;
        }

        @Override
        public void expose(Buf b) {
            exposed.set(rank(), b);
        }

        @Override
        public io.jccl.Tensor allocate(DataType dtype, int count) {
            return io.jccl.Tensor.ofArray(dtype, dtype.newArray(count), 0, count);
        }

        @Override
        public boolean exposeRegistered(io.jccl.Tensor t) {
            return false; // threads expose any array (expose(Buf)); there is no registered region
        }

        @Override
        public void copyExposed(int r, int at, int n, DataType dtype) {
            Buf from = exposed.get(r);
            Buf to = exposed.get(rank());
            System.arraycopy(from.array(), from.offset() + at, to.array(), to.offset() + at, n);
        }

        @Override
        public void putExposed(int r, int at, Buf src) {
            src.copyTo(0, exposed.get(r).slice(at, src.count()), 0, src.count());
        }

        @Override
        public void put(int half, int at, Buf src) {
            if (src.isMemory()) { // a direct buffer (a tensor over memory across hosts): through Buf's copies
                src.copyTo(0, region(rank(), half, src.dtype(), at, src.count()), 0, src.count());
            } else if (half == EXPOSED) {
                Buf e = exposed.get(rank());
                System.arraycopy(src.array(), src.offset(), e.array(), e.offset() + at, src.count());
            } else {
                System.arraycopy(src.array(), src.offset(), array(rank(), half, src.dtype()), at, src.count());
            }
        }

        @Override
        public void get(int r, int half, int at, Buf dst, int to, int n) {
            dst.checkRange(to, n);
            if (dst.isMemory()) {
                region(r, half, dst.dtype(), at, n).copyTo(0, dst, to, n);
            } else if (half == EXPOSED) {
                Buf e = exposed.get(r);
                System.arraycopy(e.array(), e.offset() + at, dst.array(), dst.offset() + to, n);
            } else {
                System.arraycopy(array(r, half, dst.dtype()), at, dst.array(), dst.offset() + to, n);
            }
        }

        @Override
        public void reduce(int r, int half, int at, Buf acc, ReduceOp op) {
            if (acc.isMemory()) {
                Reductions.reduce(op, acc, region(r, half, acc.dtype(), at, acc.count()));
            } else if (half == EXPOSED) {
                Buf e = exposed.get(r);
                Reductions.reduce(acc.dtype(), op, acc.array(), acc.offset(), e.array(), e.offset() + at,
                        acc.count());
            } else {
                Reductions.reduce(acc.dtype(), op, acc.array(), acc.offset(), array(r, half, acc.dtype()), at,
                        acc.count());
            }
        }

        /** Elements {@code [at, at + n)} of rank {@code r}'s buffer {@code half} (or its exposed buffer) as a Buf. */
        private Buf region(int r, int half, DataType dt, int at, int n) {
            if (half == EXPOSED) {
                return exposed.get(r).slice(at, n);
            }
            return new Buf(dt, array(r, half, dt), at, n);
        }

        @Override
        public ByteBuffer signatureSlot(int half) {
            return slots[half];
        }

        @Override
        public boolean sameSignature(int r, int half) {
            return FrameDescriptor.sameCall(signatures[rank()], half * SLOT_BYTES, signatures[r], half * SLOT_BYTES);
        }

        @Override
        public FrameHeader signature(int r, int half) {
            return FrameDescriptor.decodeAtOrNull(signatures[r], half * SLOT_BYTES);
        }

        @Override
        public void publish(int which, long value) {
            counters.lazySet(rank() * COUNTERS + which, value);
        }

        @Override
        public long counter(int r, int which) {
            return counters.get(r * COUNTERS + which);
        }

        @Override
        protected void checkPeers() {
            // a thread rank that fails aborts its peers through their inboxes; nothing to poll here
        }
    }
}
