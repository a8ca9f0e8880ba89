package io.jccl.transport.shm;

import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameFormatException;
import io.jccl.transport.FrameHeader;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static io.jccl.transport.shm.ShmSegmentDescriptor.ABORT_DOORBELL_OFFSET;
import static io.jccl.transport.shm.ShmSegmentDescriptor.ABORT_FRAME_IN_SLOT;
import static io.jccl.transport.shm.ShmSegmentDescriptor.ABORT_LENGTH_IN_SLOT;
import static io.jccl.transport.shm.ShmSegmentDescriptor.ABORT_SEQUENCE_IN_SLOT;
import static io.jccl.transport.shm.ShmSegmentDescriptor.ABORT_SLOTS;
import static io.jccl.transport.shm.ShmSegmentDescriptor.ABORT_SLOT_LENGTH;
import static io.jccl.transport.shm.ShmSegmentDescriptor.abortMailboxOffset;

/**
 * The way an abort (or a goodbye) reaches a peer when its ring cannot take it (segment version 7,
 * {@link ShmSegmentDescriptor}):
 * the ring is full because the peer reads nothing, or another thread of this rank holds the ring while it waits for
 * room or writes a frame in fragments. Each ring has a mailbox of {@code ABORT_SLOTS} aborts beside it, written by
 * the ring's source in turn, each slot under a sequence lock, and each segment a doorbell that a source rings after
 * it posts. The owner looks at its doorbell (one load of a line nobody writes until an abort) every time it drains
 * its rings, and reads the mailboxes only when it rang.
 *
 * <p>A mailbox keeps the last {@code ABORT_SLOTS} aborts posted (one transport serves every communicator of a rank:
 * a failure aborts each): an abort overwritten before the owner read it is lost, and the ring stays the first way.
 */
final class ShmAbortMailbox {
    private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class,
            ByteOrder.nativeOrder());

    private ShmAbortMailbox() {
    }

    /** The largest UTF-8 reason a slot holds; a longer one is cut to at most this many bytes. */
    static int maxReasonBytes() {
        return ABORT_SLOT_LENGTH - ABORT_FRAME_IN_SLOT - FrameDescriptor.HEADER_LENGTH;
    }

    /** How many bytes of {@code reason} fit a slot, cut at a character's first byte (UTF-8). */
    static int fitted(byte[] reason, int length) {
        if (length <= maxReasonBytes()) {
            return length;
        }
        int n = maxReasonBytes();
        while (n > 0 && (reason[n] & 0xC0) == 0x80) {
            n--; // reason[n] continues a character that started before: cut before that character
        }
        return n;
    }

    /**
     * The producer's side: posts {@code abort} (a header and a {@code byte[]} UTF-8 reason; or a goodbye, its
     * payload empty) into slot {@code slot}
     * (taken modulo the slots) of the mailbox of {@code source}'s ring in {@code peer}, a peer's segment, and rings
     * its doorbell. The caller keeps one thread at a time posting from {@code source} to that peer, and takes the
     * slots in turn.
     */
    static void post(ByteBuffer peer, int source, int capacity, int slot, Frame abort) {
        byte[] reason = (byte[]) abort.payload();
        int n = fitted(reason, abort.header().payloadCount());
        FrameHeader h = abort.header().withStep(abort.header().step(), n);
        int at = slotOffset(source, capacity, slot);
        long seq = (long) LONGS.getAcquire(peer, at + ABORT_SEQUENCE_IN_SLOT);
        LONGS.setOpaque(peer, at + ABORT_SEQUENCE_IN_SLOT, seq + 1); // odd: being written
        VarHandle.releaseFence(); // the odd sequence is visible before any byte of the new abort
        ByteBuffer w = peer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        w.putInt(at + ABORT_LENGTH_IN_SLOT, FrameDescriptor.HEADER_LENGTH + n);
        FrameDescriptor.encodeAt(h, w, at + ABORT_FRAME_IN_SLOT);
        w.position(at + ABORT_FRAME_IN_SLOT + FrameDescriptor.HEADER_LENGTH);
        w.put(reason, 0, n);
        LONGS.setRelease(peer, at + ABORT_SEQUENCE_IN_SLOT, seq + 2); // even: complete
        LONGS.getAndAdd(peer, ABORT_DOORBELL_OFFSET, 1L);
    }

    private static int slotOffset(int source, int capacity, int slot) {
        return Math.toIntExact(abortMailboxOffset(source, capacity)) + Math.floorMod(slot, ABORT_SLOTS)
                * ABORT_SLOT_LENGTH;
    }

    /** The owner's side: the doorbell and the mailboxes of its segment. Used by one thread at a time. */
    static final class Reader {
        private final ByteBuffer own;
        private final int capacity;
        private final int self;
        /** By source and slot: the sequence of the abort last read there (0: none). */
        private final long[][] seen;
        /** The doorbell when the mailboxes were last read in full. */
        private long rung;

        Reader(ByteBuffer own, int size, int capacity, int self) {
            this.own = own;
            this.capacity = capacity;
            this.self = self;
            this.seen = new long[size][ABORT_SLOTS];
        }

        /** Whether a source rang the doorbell since the last {@link #collect}: one load. */
        boolean rang() {
            return (long) LONGS.getAcquire(own, ABORT_DOORBELL_OFFSET) != rung;
        }

        /**
         * Hands every abort posted since the last call to {@code to}, with its source. A slot its source is writing
         * at that instant is read again at the next call (the doorbell stays "rang"). A slot whose bytes are not an
         * abort frame is skipped and reported through {@code corrupt}.
         */
        void collect(Sink to) {
            long bell = (long) LONGS.getAcquire(own, ABORT_DOORBELL_OFFSET);
            boolean complete = true;
            for (int src = 0; src < seen.length; src++) {
                if (src == self) {
                    continue;
                }
                for (int slot = 0; slot < ABORT_SLOTS; slot++) {
                    complete &= read(src, slot, to);
                }
            }
            if (complete) {
                rung = bell;
            }
        }

        /** Reads one slot if it holds an abort not read yet; false if its source was writing it. */
        private boolean read(int src, int slot, Sink to) {
            int at = slotOffset(src, capacity, slot);
            long s1 = (long) LONGS.getAcquire(own, at + ABORT_SEQUENCE_IN_SLOT);
            if (s1 == seen[src][slot]) {
                return true;
            }
            if ((s1 & 1) != 0) {
                return false;
            }
            ByteBuffer r = own.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            int length = r.getInt(at + ABORT_LENGTH_IN_SLOT);
            byte[] copy = null;
            if (length >= FrameDescriptor.HEADER_LENGTH && length <= ABORT_SLOT_LENGTH - ABORT_FRAME_IN_SLOT) {
                copy = new byte[length];
                r.position(at + ABORT_FRAME_IN_SLOT);
                r.get(copy);
            }
            VarHandle.acquireFence(); // the bytes are read before the sequence is read again
            if ((long) LONGS.getAcquire(own, at + ABORT_SEQUENCE_IN_SLOT) != s1) {
                return false; // written meanwhile: read it next time
            }
            seen[src][slot] = s1;
            Frame abort;
            try {
                abort = decode(copy);
            } catch (FrameFormatException e) {
                to.corrupt(src, e.getMessage());
                return true;
            }
            to.abort(src, abort);
            return true;
        }

        private static Frame decode(byte[] copy) {
            if (copy == null) {
                throw new FrameFormatException("an abort mailbox with an impossible length");
            }
            FrameHeader h = FrameDescriptor.decode(copy);
            if (!h.isAbort() && h.type() != FrameDescriptor.TYPE_GOODBYE) {
                throw new FrameFormatException("a frame of type " + h.type() + " in an abort mailbox");
            }
            int n = h.payloadCount();
            if (n != copy.length - FrameDescriptor.HEADER_LENGTH) {
                throw new FrameFormatException("an abort of " + n + " reason bytes in a mailbox holding "
                        + (copy.length - FrameDescriptor.HEADER_LENGTH));
            }
            byte[] reason = java.util.Arrays.copyOfRange(copy, FrameDescriptor.HEADER_LENGTH, copy.length);
            return new Frame(h, reason);
        }
    }

    /** Where {@link Reader#collect} hands what it read. */
    interface Sink {
        void abort(int src, Frame abort);

        void corrupt(int src, String why);
    }
}
