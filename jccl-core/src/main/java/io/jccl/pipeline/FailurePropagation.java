package io.jccl.pipeline;

import io.jccl.CommunicatorAbortedException;
import io.jccl.DataType;
import io.jccl.JcclException;
import io.jccl.OpType;
import io.jccl.PeerAbortedException;
import io.jccl.step.Signature;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Streams;
import io.jccl.transport.SubTransport;
import io.jccl.transport.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;

/**
 * How a communicator fails, is aborted and closes: the first failure of any call is recorded and every peer is
 * told ({@link #fail}); later calls are refused; {@link #abort} and {@link #close} end this rank's own call in
 * flight at once (as NCCL's {@code ncclCommAbort}) instead of at its deadline, and {@link #close} waits for it to
 * leave, up to 10 s, before the transport closes under it. Calls of this rank (collective or point-to-point) are
 * counted while they run ({@link #enterCall}, {@link #exitCall}).
 */
final class FailurePropagation {
    /** Logged as the communicator, as before the pipeline was split. */
    private static final Logger LOG = LoggerFactory.getLogger(DefaultCommunicator.class);
    private static final long CLOSE_WAIT_NANOS = 10_000_000_000L;

    private final Transport transport;
    private final int communicatorId;
    private final Object lock = new Object();
    private volatile RuntimeException failure;
    private volatile boolean closed;
    /** Calls of this rank running now; close() waits on {@link #lock} for it to reach 0. */
    private final java.util.concurrent.atomic.AtomicInteger inFlight = new java.util.concurrent.atomic.AtomicInteger();
    /** Why this rank ended its own calls (close or abort), or null. */
    private volatile String localEnd;

    private final Diagnostics diagnostics;

    FailurePropagation(Transport transport, int communicatorId, Diagnostics diagnostics) {
        this.transport = transport;
        this.communicatorId = communicatorId;
        this.diagnostics = diagnostics;
    }

    private int rank() {
        return transport.rank();
    }

    /** Refuses a new call of a closed or failed communicator. */
    void checkUsable(OpType op) {
        if (closed) {
            throw new CommunicatorAbortedException(rank(), op, "the communicator is closed", null);
        }
        RuntimeException f = failure;
        if (f != null) {
            throw new CommunicatorAbortedException(rank(), op, "the communicator failed earlier: " + f.getMessage(),
                    f);
        }
    }

    /** Refuses to start a call, at its turn, once the communicator has closed or failed since it was made. */
    void checkStart(OpType op) {
        RuntimeException f = failure;
        if (f != null || closed) {
            throw new CommunicatorAbortedException(rank(), op,
                    closed ? "the communicator is closed" : "the communicator failed earlier: " + f.getMessage(), f);
        }
    }

    /**
     * Records the first failure and tells every peer. A failure this rank learned from a peer is passed on with
     * that peer as its origin: peers that have not noticed yet (a death seen first by one rank) learn the cause
     * instead of only that this rank stopped.
     */
    RuntimeException fail(RuntimeException e) {
        boolean first;
        synchronized (lock) {
            first = failure == null;
            if (first) {
                failure = e;
            }
        }
        if (first) {
            LOG.debug("rank {} aborting peers: {}", rank(), e.getMessage());
            if (e instanceof PeerAbortedException) {
                PeerAbortedException p = (PeerAbortedException) e;
                // a process outside this sub-group is passed on as such, not as the member that has its number
                notifyPeers(p.outsideOrigin() >= 0 && transport instanceof SubTransport
                        ? ((SubTransport) transport).outsiderSource(p.outsideOrigin()) : p.originRank(), p.reason());
            } else {
                notifyPeers(rank(), e.getMessage());
            }
            diagnostics.dumpOnFailure(e.getMessage());
        }
        return e;
    }

    private void notifyPeers(int origin, String reason) {
        try {
            Signature sig = new Signature(OpType.BARRIER, -1, DataType.UINT8, 0, -1, null, null);
            int[] peers = new int[transport.size()];
            for (int i = 0; i < peers.length; i++) {
                peers[i] = i;
            }
            boolean outsider = transport instanceof SubTransport
                    && ((SubTransport) transport).outsiderWorldRank(origin) >= 0;
            int source = origin >= 0 && (origin < transport.size() || outsider) ? origin : rank();
            transport.abortPeers(peers, sig.header(FrameDescriptor.TYPE_ABORT, source, 0, 0,
                    Streams.collective(communicatorId)), reason);
        } catch (RuntimeException notified) {
            LOG.warn("rank {} could not notify every peer of its failure", rank(), notified);
        }
    }

    /** {@code Communicator.abort}: fails the communicator, tells every peer, and ends this rank's call in flight. */
    void abort(String reason) {
        String why = reason == null ? "aborted" : reason;
        String message = "rank " + rank() + " aborted the communicator: " + why;
        fail(new JcclException(rank(), null, -1, message, null));
        interruptOwnCall(message);
    }

    /** A call of this rank's (collective or point-to-point) is running: {@link #close()} waits for it. */
    /** Counts a call in flight (no lock: an atomic add; close() waits for the count to reach 0). */
    void enterCall() {
        inFlight.incrementAndGet();
    }

    /**
     * Ends a call in flight; wakes a close() waiting for it. No wake-up is lost: this reads {@link #closed} after its
     * decrement, and close() sets it before it reads the count.
     */
    void exitCall() {
        if (inFlight.decrementAndGet() == 0 && closed) {
            synchronized (lock) {
                lock.notifyAll();
            }
        }
    }

    /**
     * Ends this rank's own call in flight, if any: close() and abort() on another thread make it fail at once
     * (as NCCL's {@code ncclCommAbort}) instead of at its deadline or when a peer answers.
     */
    private void interruptOwnCall(String reason) {
        synchronized (lock) {
            if (localEnd == null) {
                localEnd = reason;
            }
            if (inFlight.get() == 0) {
                return;
            }
        }
        Signature sig = new Signature(OpType.BARRIER, -1, DataType.UINT8, 0, -1, null, null);
        byte[] bytes = reason.getBytes(StandardCharsets.UTF_8);
        FrameHeader h = sig.header(FrameDescriptor.TYPE_ABORT, rank(), 0, bytes.length,
                Streams.collective(communicatorId));
        try {
            transport.interrupt(new Frame(h, bytes));
        } catch (RuntimeException e) {
            LOG.warn("rank {} could not interrupt its own call in flight", rank(), e);
        }
    }

    /**
     * The failure a call reports: when this rank itself ended the call (close() or abort() on another thread),
     * a {@link CommunicatorAbortedException} that says so, not an abort that seems to come from a peer.
     */
    RuntimeException ended(OpType op, long seq, RuntimeException e) {
        String why = localEnd;
        if (why != null && e instanceof PeerAbortedException && ((PeerAbortedException) e).originRank() == rank()) {
            return new CommunicatorAbortedException(rank(), op, seq, why, e);
        }
        return e;
    }

    /**
     * The first half of {@code close()}: refuses every later call, ends this rank's call in flight and waits up to
     * 10 s for it to leave. Returns false if the communicator was closed already (then it does nothing).
     */
    boolean close() {
        synchronized (lock) {
            if (closed) {
                return false;
            }
            closed = true;
        }
        interruptOwnCall("rank " + rank() + " closed its communicator during the call");
        // wait for the interrupted call to leave before the transport closes under it
        long until = System.nanoTime() + CLOSE_WAIT_NANOS;
        boolean interrupted = false;
        synchronized (lock) {
            while (inFlight.get() > 0 && until - System.nanoTime() > 0) {
                try {
                    lock.wait(Math.max(1, (until - System.nanoTime()) / 1_000_000));
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (inFlight.get() > 0) {
                LOG.warn("rank {}: a call still runs {} ms after close(); closing the transport anyway", rank(),
                        CLOSE_WAIT_NANOS / 1_000_000);
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return true;
    }
}
