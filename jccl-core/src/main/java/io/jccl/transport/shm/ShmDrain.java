package io.jccl.transport.shm;

import io.jccl.DataType;
import io.jccl.buffer.Buf;
import io.jccl.transport.ArrayPool;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameFormatException;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Inbox;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.concurrent.locks.ReentrantLock;

import static io.jccl.transport.shm.ShmSegmentDescriptor.FIRST_FRAGMENT;

/**
 * The receiving side of a {@link ShmTransport}: the rings into this rank's segment, drained by whichever thread
 * of the rank waits, with the fragments of each source reassembled into frames for the {@link Inbox}.
 */
final class ShmDrain {
    private static final Logger LOG = LoggerFactory.getLogger(ShmDrain.class);

    private final int rank;
    private final Inbox inbox;
    private final ArrayPool pool;
    private final PeerWatch watch;
    private final ReentrantLock lock = new ReentrantLock();
    /** By source: the ring into this rank's segment; null for this rank and for a ring found corrupt. */
    private final ShmRing[] rings;
    private final ShmRing.Handler[] handlers;
    private final Reassembly[] partial;
    /** The abort mailboxes of this rank's segment (null until set); read under {@link #lock}. */
    private ShmAbortMailbox.Reader mailbox;
    /** Aborts read from the mailboxes, by source, handed to the inbox once the rings are drained. */
    private final java.util.List<Frame> mailed = new java.util.ArrayList<>();
    private final java.util.List<Integer> mailedFrom = new java.util.ArrayList<>();
    private final ShmAbortMailbox.Sink aborts = new ShmAbortMailbox.Sink() {
        @Override
        public void abort(int src, Frame abort) {
            mailed.add(abort);
            mailedFrom.add(src);
        }

        @Override
        public void corrupt(int src, String why) {
            LOG.error("{}: corrupt abort mailbox from {}: {}", watch.name(rank), watch.name(src), why);
            inbox.peerLost(Frame.peerGone(src, "corrupt abort in the shared-memory mailbox from " + watch.name(src)
                    + ": " + why));
        }
    };

    /** A frame from one source being reassembled from its fragments. */
    private static final class Reassembly {
        FrameHeader header;
        DataType dtype;
        Object array;
        int filled;
    }

    ShmDrain(int rank, int size, Inbox inbox, ArrayPool pool, PeerWatch watch) {
        this.rank = rank;
        this.inbox = inbox;
        this.pool = pool;
        this.watch = watch;
        this.rings = new ShmRing[size];
        this.handlers = new ShmRing.Handler[size];
        this.partial = new Reassembly[size];
        for (int i = 0; i < size; i++) {
            int src = i;
            partial[i] = new Reassembly();
            handlers[i] = (type, message) -> onFragment(src, type, message);
        }
    }

    /** Reads the abort mailboxes of this rank's segment, when a source rang, at every drain. */
    void mailbox(ShmAbortMailbox.Reader reader) {
        lock.lock();
        try {
            mailbox = reader;
        } finally {
            lock.unlock();
        }
    }

    void attach(int src, ShmRing ring) {
        lock.lock();
        try {
            rings[src] = ring;
        } finally {
            lock.unlock();
        }
    }

    /** Moves every complete fragment waiting in the rings into the inbox; nothing if another thread is at it. */
    void drain() {
        if (!lock.tryLock()) {
            return;
        }
        try {
            drainHeld();
        } finally {
            lock.unlock();
        }
    }

    /**
     * As {@link #drain}, waiting for another thread that drains: afterwards, everything that was in the rings when
     * this was called is in the inbox (a goodbye included: {@link PeerWatch} drains so before it declares a peer dead).
     */
    void drainAll() {
        lock.lock();
        try {
            drainHeld();
        } finally {
            lock.unlock();
        }
    }

    /** The lock a draining thread holds (tests: a drain in progress on another thread). */
    ReentrantLock lock() {
        return lock;
    }

    /** The drain, {@link #lock} held. */
    private void drainHeld() {
        // the mailboxes are read before the rings and their aborts delivered after: a source commits its frames
        // before it posts an abort, so every frame it sent before the abort is then in the inbox before the abort
        boolean rang = mailbox != null && mailbox.rang();
        if (rang) {
            mailbox.collect(aborts);
        }
        for (int src = 0; src < rings.length; src++) {
            ShmRing ring = rings[src];
            if (ring == null) {
                continue;
            }
            try {
                ring.read(handlers[src]);
            } catch (FrameFormatException e) {
                LOG.error("{}: corrupt ring from {}: {}", watch.name(rank), watch.name(src), e.getMessage());
                rings[src] = null; // nothing after an impossible record can be trusted
                inbox.peerLost(Frame.peerGone(src, "corrupt frame in the shared-memory ring from " + watch.name(src)
                        + ": " + e.getMessage()));
            }
        }
        if (rang) {
            deliverMailed();
        }
    }

    /** Hands the frames read from the mailboxes to the inbox, each once. */
    private void deliverMailed() {
        try {
            for (int i = 0; i < mailed.size(); i++) {
                int src = mailedFrom.get(i);
                if (mailed.get(i).header().type() == FrameDescriptor.TYPE_GOODBYE) {
                    watch.departed(src);
                    inbox.peerClosed(src, Frame.departed(src));
                } else {
                    inbox.deliver(src, mailed.get(i));
                }
            }
        } finally {
            mailed.clear();
            mailedFrom.clear();
        }
    }

    private void onFragment(int src, int type, ByteBuffer bb) {
        Reassembly r = partial[src];
        try {
            if (type == FIRST_FRAGMENT) {
                FrameHeader h = FrameDescriptor.decode(bb);
                if (h.type() == FrameDescriptor.TYPE_GOODBYE) {
                    deliverMailed(); // an abort its source mailed before it left comes before its departure
                    watch.departed(src); // it left cleanly: its process may exit now without that being a failure
                    inbox.peerClosed(src, Frame.departed(src));
                    return;
                }
                r.header = h;
                r.dtype = DataType.fromId(h.dtype());
                r.array = pool.take(r.dtype, h.payloadCount());
                r.filled = 0;
            } else if (r.header == null) {
                throw new FrameFormatException("a continuation fragment with no frame started");
            }
            int m = bb.remaining() / r.dtype.sizeBytes();
            if (r.filled + m > r.header.payloadCount()) {
                throw new FrameFormatException("fragments exceed the announced payload count "
                        + r.header.payloadCount());
            }
            new Buf(r.dtype, r.array, r.filled, m).readFrom(bb);
            r.filled += m;
            if (r.filled == r.header.payloadCount()) {
                inbox.deliver(src, new Frame(r.header, r.array));
                r.header = null;
                r.array = null;
            }
        } catch (FrameFormatException | IllegalArgumentException e) {
            LOG.error("{}: corrupt frame in the ring from {}: {}", watch.name(rank), watch.name(src), e.getMessage());
            inbox.peerLost(Frame.peerGone(src, "corrupt frame in the shared-memory ring from " + watch.name(src)
                    + ": " + e.getMessage()));
        }
    }
}
