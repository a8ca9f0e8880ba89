package io.jccl.transport.local;

import io.jccl.DataType;
import io.jccl.buffer.Buf;
import io.jccl.transport.AbstractTransport;
import io.jccl.transport.ArrayPool;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Inbox;
import io.jccl.transport.SharedArena;
import io.jccl.transport.Transport;

/**
 * The in-process queue mesh: N ranks as threads of one JVM, one FIFO queue per directed edge and stream, each
 * with a single producer (the source rank) and a single consumer (the destination rank).
 *
 * <p>A send encodes the header with {@link FrameDescriptor}, decodes it on the receiving side, and copies the
 * payload range into a fresh array, so the sender may reuse its buffer at once and the receiver owns what it
 * takes.
 */
public final class QueueMesh {
    private final int size;
    private final Inbox[] inboxes;
    private final ArrayPool pool = new ArrayPool();
    private final LocalArena arena;

    private QueueMesh(int size, int arenaBytes, int oversubscribedSpins) {
        if (size < 1) {
            throw new IllegalArgumentException("world size must be at least 1: size=" + size);
        }
        this.size = size;
        this.inboxes = new Inbox[size];
        for (int r = 0; r < size; r++) {
            inboxes[r] = new Inbox(size);
        }
        this.arena = new LocalArena(size, arenaBytes, oversubscribedSpins);
    }

    /** A mesh with the default exchange buffers (4 MiB) and waits; {@code Jccl} passes the settings instead. */
    public static QueueMesh create(int size) {
        return create(size, LocalArena.DEFAULT_BYTES);
    }

    /** A mesh whose shared arena has exchange buffers of {@code arenaBytes} (a multiple of 8, at least 4096). */
    public static QueueMesh create(int size, int arenaBytes) {
        return create(size, arenaBytes, io.jccl.transport.WaitStrategy.OVERSUBSCRIBED_SPINS_DEFAULT);
    }

    /** As {@link #create(int, int)}, waits spinning {@code oversubscribedSpins} times when ranks outnumber cores. */
    public static QueueMesh create(int size, int arenaBytes, int oversubscribedSpins) {
        return new QueueMesh(size, arenaBytes, oversubscribedSpins);
    }

    public int size() {
        return size;
    }

    /** The transport of one rank. */
    public Transport endpoint(int rank) {
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank out of range: rank=" + rank + ", size=" + size);
        }
        return new Endpoint(rank);
    }

    private final class Endpoint extends AbstractTransport {
        private final SharedArena view;

        Endpoint(int rank) {
            super("local", rank, QueueMesh.this.size, inboxes[rank], QueueMesh.this.pool);
            this.view = arena.view(rank);
        }

        @Override
        public SharedArena arena() {
            return view;
        }

        @Override
        public void send(int dst, FrameHeader header, Buf payload) {
            ensureOpen();
            int n = header.payloadCount();
            Object copy = pool.take(payload.dtype(), n);
            if (n > 0) {
                payload.copyTo(0, new Buf(payload.dtype(), copy, 0, n), 0, n);
            }
            FrameHeader wire = FrameDescriptor.decode(FrameDescriptor.encode(header));
            inboxes[dst].deliver(rank, new Frame(wire, copy));
        }

        @Override
        protected void sendAbort(int peer, Frame abort) {
            inboxes[peer].deliver(rank, abort);
        }

        @Override
        public void close() {
            // queues belong to the mesh; the peers learn that this rank left (after the frames it sent)
            if (closing) {
                return;
            }
            closing = true;
            for (int peer = 0; peer < size; peer++) {
                if (peer != rank) {
                    inboxes[peer].peerClosed(rank, Frame.departed(rank));
                }
            }
        }
    }
}
