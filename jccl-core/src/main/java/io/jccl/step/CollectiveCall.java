package io.jccl.step;

import io.jccl.buffer.Buf;

import io.jccl.CollectiveMismatchException;
import io.jccl.CollectiveTimeoutException;
import io.jccl.PeerAbortedException;
import io.jccl.ReduceOp;
import io.jccl.instrument.Counter;
import io.jccl.instrument.TrafficCounters;
import io.jccl.reduce.Reductions;
import io.jccl.transport.Streams;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.PostedReceive;
import io.jccl.transport.SubTransport;
import io.jccl.transport.Transport;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * One call in progress on one rank, and the step vocabulary algorithms are written in: {@link #send},
 * {@link #recvInto} (receive and copy) and {@link #recvReduce} (receive and reduce), each at the current
 * {@link #step(int, String) step}.
 *
 * <p>Every receive checks the peer's header against this call's {@link Signature} before reading the payload,
 * and waits at most until the call's deadline. Traffic is counted per operation.
 */
public final class CollectiveCall {
    /** First wait on one peer before looking at the others' frames; doubled up to {@link #MAX_SLICE_NANOS}. */
    private static final long FIRST_SLICE_NANOS = 1_000_000L;
    private static final long MAX_SLICE_NANOS = 100_000_000L;

    private final Transport transport;
    private final int stream;
    private final Signature signature;
    /** Read through {@link #deadline()}, which starts a call that {@link #startLate starts late}. */
    private long deadlineNanos;
    private Duration timeout;
    /** The clock when this call started ({@link #start}). */
    private long startNanos;
    /** Whether this call has started: read the clock and told {@link #onStart}; false only after {@link #startLate}. */
    private boolean started = true;
    /** Told once when a call that {@link #startLate starts late} starts; null for others. */
    private CallStart onStart;
    private final TrafficCounters counters;
    /** {@link #countInTurn}. */
    private boolean inTurn;
    private int step;
    private String phase = "start";
    private long bytesSent;
    private long bytesReceived;
    private int messagesSent;
    private int messagesReceived;
    /** The peers this call sent to and received from (the trace's fields); made at the first message. */
    private java.util.BitSet peersSent;
    private java.util.BitSet peersReceived;

    private final io.jccl.transport.ArrayPool scratch;
    /** {@link #overlapsHosts}. */
    private boolean overlapHosts;
    /** The flight recorder that learns where this call waits, or null; and this call's record there. */
    private io.jccl.diag.FlightRecorder recorder;
    private long recordId = -1;

    /**
     * Receives posted and not yet completed, oldest first; kept by the {@link #tally} (shared with the calls of
     * {@link #subgroup}s) and made at the first receive, so that a shared-memory call allocates none.
     */
    private java.util.ArrayList<Receive> outstanding;
    /**
     * The {@link #detachedSubgroup}s made of this call (kept by the {@link #tally}; null until the first), whose
     * outstanding receives {@link #cancelOutstanding} cancels too: a failed call's late frame must not land in its
     * caller's buffer, whichever group posted the receive.
     */
    private java.util.concurrent.ConcurrentLinkedQueue<CollectiveCall> detachedCalls;
    /** Added to every step this call sets: a {@link #subgroup}'s phase numbers its steps after its parent's. */
    private final int stepBase;
    /** The call whose traffic this one counts (this one, or the call a subgroup was made from). */
    private final CollectiveCall tally;
    /** The transport's rank of each of this call's ranks (a {@link #subgroup}'s); null: the transport's own. */
    private final int[] members;
    /** This rank among {@link #members}. */
    private final int me;
    /** The arena of a {@link #hostSubgroup} (the transport's {@link Transport#hostArena}); null for other calls. */
    private final io.jccl.transport.SharedArena hostArena;
    /**
     * Whether this call may be {@link #restart restarted} for a later call once it ends: false once it posted a
     * receive or made a subgroup, whose objects refer to it and might outlive it (a transport's reader thread, a
     * pipelined phase's thread).
     */
    private boolean reusable = true;

    public CollectiveCall(Transport transport, int stream, Signature signature, Duration timeout,
                          TrafficCounters counters) {
        this(transport, stream, signature, timeout, counters, new io.jccl.transport.ArrayPool());
    }

    public CollectiveCall(Transport transport, int stream, Signature signature, Duration timeout,
                          TrafficCounters counters, io.jccl.transport.ArrayPool scratch) {
        this(transport, stream, signature, timeout, counters, scratch, System.nanoTime());
    }

    /** As the constructor above, the call having started at {@code startNanos} ({@code System.nanoTime()}). */
    public CollectiveCall(Transport transport, int stream, Signature signature, Duration timeout,
                          TrafficCounters counters, io.jccl.transport.ArrayPool scratch, long startNanos) {
        this.lastClock = startNanos;
        this.startNanos = startNanos;
        this.scratch = scratch;
        this.transport = transport;
        this.stream = stream;
        this.signature = signature;
        this.timeout = timeout;
        this.deadlineNanos = startNanos + timeout.toNanos();
        this.counters = counters;
        this.stepBase = 0;
        this.tally = this;
        this.members = null;
        this.me = -1;
        this.hostArena = null;
    }

    /**
     * Whether this call can be {@link #restart restarted} once it has ended: it posted no receive and made no
     * subgroup (nothing that refers to it can outlive it).
     */
    public boolean reusable() {
        return reusable && members == null;
    }

    /**
     * Makes this ended call, which must be {@link #reusable}, the call described by the arguments, as if made new
     * with {@link #CollectiveCall(Transport, int, Signature, Duration, TrafficCounters,
     * io.jccl.transport.ArrayPool, long) the constructor} (same transport, stream, counters and pool) and then
     * told to {@link #startLate start late}, telling {@code onStart}: a synchronous caller reuses one call object,
     * and so one signature, for every call (no allocation per call).
     */
    public void restart(io.jccl.OpType op, long sequence, io.jccl.DataType dtype, long count, int root,
                        ReduceOp reduceOp, io.jccl.Algorithm algorithm, Duration timeout, CallStart onStart) {
        if (!reusable()) {
            throw new IllegalStateException("this call posted receives or made subgroups: it cannot be reused");
        }
        signature.set(op, sequence, dtype, count, root, reduceOp, algorithm);
        this.timeout = timeout;
        startLate(onStart);
        this.step = 0;
        this.phase = "start";
        this.bytesSent = 0;
        this.bytesReceived = 0;
        this.messagesSent = 0;
        this.messagesReceived = 0;
        this.peersSent = null;
        this.peersReceived = null;
        this.overlapHosts = false;
        this.recorder = null;
        this.recordId = -1;
        this.lastWaitedFor = -1;
    }

    /**
     * Has this call start late: it reads the clock (its start, from which its deadline counts) and tells
     * {@code onStart} only when it first needs to, so that a shared-memory call does that book-keeping after it has
     * published its arrival, while the peers' arrivals cross the cores, rather than before: when it first waits,
     * sends, posts a receive or makes a subgroup, right after it publishes an arrival in the arena, or when its
     * pipeline calls {@link #start} once the algorithm has run (a call that never had to). Until then
     * {@link #startNanos} and {@link #lastClock} are not this call's. It must start on its own thread: the pipeline
     * has only small shared-memory calls start late, which make no second thread ({@code
     * CollectiveAlgorithm.startsLate}).
     */
    public void startLate(CallStart onStart) {
        this.onStart = onStart;
        this.started = false;
    }

    /**
     * Starts this call if it {@link #startLate starts late} and has not started: reads the clock, from which the
     * deadline counts, and tells its {@link CallStart}. Nothing otherwise.
     */
    public void start() {
        if (started) {
            return;
        }
        started = true;
        long now = System.nanoTime();
        startNanos = now;
        lastClock = now;
        deadlineNanos = now + timeout.toNanos();
        if (onStart != null) {
            onStart.started(this, now);
        }
    }

    /** When this call {@link #start started} ({@code System.nanoTime()}). */
    public long startNanos() {
        return startNanos;
    }

    /** This call's deadline ({@code System.nanoTime()}); {@link #start starts} the call if it has not. */
    private long deadline() {
        start();
        return deadlineNanos;
    }

    private CollectiveCall(CollectiveCall parent, int[] members, int me, int stepBase, boolean detached,
                           io.jccl.transport.SharedArena hostArena) {
        this.hostArena = hostArena;
        this.overlapHosts = parent.overlapHosts;
        this.recorder = parent.recorder;
        this.recordId = parent.recordId;
        this.transport = parent.transport;
        this.stream = parent.stream;
        this.signature = parent.signature;
        this.timeout = parent.timeout;
        this.deadlineNanos = parent.deadline();
        this.startNanos = parent.startNanos;
        this.counters = parent.counters;
        this.scratch = parent.scratch;
        this.stepBase = parent.stepBase + stepBase;
        this.tally = detached ? this : parent.tally;
        this.inTurn = parent.inTurn && !detached; // a detached subgroup's thread counts beside the parent's
        int[] ranks = new int[members.length];
        for (int i = 0; i < members.length; i++) {
            ranks[i] = parent.w(members[i]);
        }
        this.members = ranks;
        this.me = me;
    }

    /**
     * This call as seen by a group of its ranks ({@code members}, in the group's rank order; this rank among them):
     * the group's ranks are 0..k-1, its frames carry this call's signature and steps {@code stepBase} and up, and
     * share its deadline, pool, counters and outstanding receives. Errors name the transport's ranks (a
     * subgroup's numbers are the algorithm's business). Hierarchical algorithms run their phases on such groups
     * (the ranks of one host; one rank of every host). A subgroup has no shared arena.
     */
    public CollectiveCall subgroup(int[] members, int stepBase) {
        start(); // the subgroup takes this call's deadline and flight-recorder entry
        int me = indexIn(members);
        reusable = false;
        return new CollectiveCall(this, members, me, stepBase, false, null);
    }

    /**
     * A {@link #subgroup} that keeps its own traffic and outstanding receives, so that another thread can run it
     * while this call's thread runs other groups (the pipelined hierarchical allreduce runs its inter-host phase
     * so). It shares everything else: the transport, signature, deadline, pool and counters (all safe to share
     * between threads). Once its thread has finished, {@link #absorb} adds its traffic to this call's.
     */
    public CollectiveCall detachedSubgroup(int[] members, int stepBase) {
        start(); // the subgroup takes this call's deadline and flight-recorder entry
        int me = indexIn(members);
        reusable = false;
        CollectiveCall d = new CollectiveCall(this, members, me, stepBase, true, null);
        CollectiveCall t = tally;
        synchronized (t) { // the pipeline's second thread makes them while the call's thread may make others
            if (t.detachedCalls == null) {
                t.detachedCalls = new java.util.concurrent.ConcurrentLinkedQueue<>();
            }
        }
        t.detachedCalls.add(d);
        return d;
    }

    /**
     * The arena of this rank's host in a transport across hosts ({@link Transport#hostArena}), for a call of the
     * communicator itself; null for a subgroup, or where the transport has none.
     */
    public io.jccl.transport.SharedArena hostArena() {
        return members == null ? transport.hostArena() : null;
    }

    /**
     * The {@link #subgroup} of the ranks of this rank's host ({@code local}: all of them, in increasing order), whose
     * {@link #arena} is the host's ({@link #hostArena}, which must not be null): its shared-memory rounds run among
     * them. Waits in it also look for aborts from the ranks of the other hosts, and its errors name the
     * communicator's ranks.
     */
    public CollectiveCall hostSubgroup(int[] local, int stepBase) {
        start(); // the subgroup takes this call's deadline and flight-recorder entry
        io.jccl.transport.SharedArena a = hostArena();
        int[] hosts = transport.hostOf();
        int on = 0;
        for (int r : local) {
            on += hosts != null && hosts[r] == hosts[self()] ? 1 : 0;
        }
        if (a == null || a.size() != local.length || on != local.length) {
            throw new IllegalArgumentException("rank " + self() + ": " + java.util.Arrays.toString(local)
                    + " are not the ranks of its host's arena");
        }
        int me = indexIn(local);
        reusable = false;
        return new CollectiveCall(this, local, me, stepBase, false, a);
    }

    private int indexIn(int[] members) {
        for (int i = 0; i < members.length; i++) {
            if (members[i] == rank()) {
                return i;
            }
        }
        throw new IllegalArgumentException("rank " + rank() + " is not in the group " + java.util.Arrays.toString(members));
    }

    /** Adds the traffic of a {@link #detachedSubgroup} whose thread has finished to this call's. */
    public void absorb(CollectiveCall detached) {
        CollectiveCall t = tally;
        t.bytesSent += detached.bytesSent;
        t.bytesReceived += detached.bytesReceived;
        t.messagesSent += detached.messagesSent;
        t.messagesReceived += detached.messagesReceived;
        t.peersSent = union(t.peersSent, detached.peersSent);
        t.peersReceived = union(t.peersReceived, detached.peersReceived);
    }

    private static java.util.BitSet union(java.util.BitSet a, java.util.BitSet b) {
        if (b == null) {
            return a;
        }
        java.util.BitSet u = a == null ? new java.util.BitSet() : a;
        u.or(b);
        return u;
    }

    /**
     * Ends every wait of this rank's on this call's communicator, on any thread, with an abort that gives
     * {@code reason} (as {@code Communicator.close} does to a call in flight): for a call that failed on one thread
     * while another thread still waits in a {@link #detachedSubgroup} of it. The communicator is unusable after.
     */
    public void interruptWaits(String reason) {
        byte[] bytes = reason.getBytes(StandardCharsets.UTF_8);
        transport.interrupt(new Frame(signature.header(FrameDescriptor.TYPE_ABORT, self(), 0, bytes.length, stream),
                bytes));
    }

    /** Which host each of this call's ranks is on ({@link Transport#hostOf}), or null when the transport does not know. */
    public int[] hostOf() {
        int[] all = transport.hostOf();
        if (all == null || members == null) {
            return all;
        }
        int[] hosts = new int[members.length];
        for (int i = 0; i < members.length; i++) {
            hosts[i] = all[members[i]];
        }
        return hosts;
    }

    /** The transport's rank of this call's rank {@code peer}. */
    private int w(int peer) {
        return members == null ? peer : members[peer];
    }

    /** The rank (of this call's communicator) this call last waited for, or -1. */
    private int lastWaitedFor = -1;
    /** This call's last reading of {@code System.nanoTime()} (its start, or when it last began to wait). */
    private long lastClock;

    /** This call's last reading of the clock: its start, or when it last began to wait ({@code System.nanoTime()}). */
    public long lastClock() {
        return tally.lastClock;
    }

    /** The rank (of this call's communicator) this call last waited for, or -1 (none, or in the shared arena). */
    public int lastWaitedFor() {
        return lastWaitedFor;
    }

    /**
     * Has this call (and every subgroup made of it afterwards) overlap the phases within and across hosts of the
     * hierarchical algorithms, or not ({@link #overlapsHosts}); off by default. Every rank must set it alike: the
     * pipeline sets it from the cost model that every rank of the job shares.
     */
    public void overlapHosts(boolean on) {
        this.overlapHosts = on;
    }

    /**
     * Whether the hierarchical algorithms run their phases within and across hosts at once, in a pipeline of chunks
     * with a second thread for the phase across hosts (where the link between hosts is the limit), rather than one
     * after the other.
     */
    public boolean overlapsHosts() {
        return overlapHosts;
    }

    /** Has {@code r} learn, under record {@code id}, the step and peer this call waits at (and its subgroups'). */
    public void observe(io.jccl.diag.FlightRecorder r, long id) {
        this.recorder = r;
        this.recordId = id;
    }

    /** This rank as the transport numbers it: what errors and frame headers carry. */
    private int self() {
        return transport.rank();
    }

    public int rank() {
        return members == null ? transport.rank() : me;
    }

    public int size() {
        return members == null ? transport.size() : members.length;
    }

    public Signature signature() {
        return signature;
    }

    /** Sets the step that the next sends carry and receives expect; {@code phase} names it in messages. */
    public void step(int newStep, String newPhase) {
        this.step = stepBase + newStep;
        this.phase = newPhase;
    }

    /** The current step, as this call's algorithm numbered it (without a subgroup's base). */
    public int currentStep() {
        return step - stepBase;
    }

    /** A working copy of {@code src} from the communicator's pool; hand it back with {@link #releaseScratch}. */
    public Buf scratchCopy(Buf src) {
        Buf b = new Buf(src.dtype(), scratch.take(src.dtype(), src.count()), 0, src.count());
        src.copyTo(b, 0);
        return b;
    }

    /** A working buffer of {@code n} elements from the communicator's pool (contents undefined). */
    public Buf scratch(io.jccl.DataType dtype, int n) {
        return new Buf(dtype, scratch.take(dtype, n), 0, n);
    }

    /**
     * As {@link #scratch(io.jccl.DataType, int)}, in the kind of memory of {@code like}: little-endian direct memory
     * when {@code like} is (a tensor from {@code Communicator.allocate} over sockets), so that what the algorithm
     * sends from it and receives into it crosses the socket with no copy, as {@code like}'s own elements do; an
     * array otherwise.
     */
    public Buf scratchLike(Buf like, int n) {
        if (!like.isWireOrderMemory()) {
            return scratch(like.dtype(), n);
        }
        long bytes = (long) n * like.dtype().sizeBytes();
        if (bytes > Integer.MAX_VALUE) {
            return scratch(like.dtype(), n);
        }
        return Buf.over(like.dtype(), scratch.takeDirect((int) bytes), 0, n);
    }

    /** Hands back a buffer from {@link #scratch}, {@link #scratchLike} or {@link #scratchCopy}. */
    public void releaseScratch(Buf b) {
        if (b.isMemory()) {
            scratch.giveDirect(b.memory());
        } else {
            scratch.give(b.dtype(), b.array());
        }
    }

    /** Sends {@code data} to {@code peer}. */
    public void send(int peer, Buf data) {
        FrameHeader h = signature.header(FrameDescriptor.TYPE_DATA, self(), step, data.count(), stream);
        boolean sent;
        try {
            sent = transport.send(w(peer), h, data, deadline());
        } catch (io.jccl.transport.PeerLostException e) {
            throw aborted(e.peer(), e.getMessage());
        } catch (ProgressExchange.RefusedCall e) { // waiting for room towards a rank that refused this call (never
            ProgressExchange.Refusal r = e.refusal(); // this rank's own: a rank that refused a call sends none of it)
            throw new PeerAbortedException(self(), signature.op(), signature.sequence(), r.rank, r.reason);
        }
        if (!sent) { // a bounded buffer towards the peer stayed full: the peer has not received, to the deadline
            // or, before it, this rank's own abort cut the write (TcpTransport.interrupt): that abort, put on this
            // rank's own queue (not a lost peer's, nor another rank's), is the reason
            Frame abort = transport.pendingAbort(self(), stream);
            if (abort != null && !abort.isDeparture() && abort.header().isAbort()
                    && abort.header().source() == self()) {
                throw aborted(abort.header().source(), new String((byte[]) abort.payload(), StandardCharsets.UTF_8));
            }
            throw timedOut(w(peer), step, "sending " + data.byteSize() + " bytes to rank " + w(peer)
                    + ", which has not received them (its buffer from this rank stayed full)");
        }
        count(Counter.MESSAGES_SENT, 1);
        count(Counter.BYTES_SENT, data.byteSize());
        tally.messagesSent++;
        tally.bytesSent += data.byteSize();
        if (tally.peersSent == null) {
            tally.peersSent = new java.util.BitSet();
        }
        tally.peersSent.set(w(peer));
    }

    /** Receives {@code dst.count()} elements from {@code peer} into {@code dst}. */
    public void recvInto(int peer, Buf dst) {
        complete(postRecv(peer, dst, null));
    }

    /** Receives {@code acc.count()} elements from {@code peer} and reduces them into {@code acc}. */
    public void recvReduce(int peer, Buf acc, ReduceOp op) {
        complete(postRecv(peer, acc, op));
    }

    /**
     * Waits, until this call's deadline, for one message from each of {@code peers} (of this call's communicator)
     * into {@code into} (one buffer per peer); returns the peers from which none came by then, in order. The
     * receives are all posted first, so each peer's message is taken whenever it comes; a message that disagrees
     * with this call fails as {@link #complete} does.
     */
    public java.util.List<Integer> arrivals(int[] peers, Buf[] into) {
        Receive[] posted = new Receive[peers.length];
        for (int i = 0; i < peers.length; i++) {
            posted[i] = postRecv(peers[i], into[i], null);
        }
        java.util.List<Integer> missing = new java.util.ArrayList<>();
        for (Receive r : posted) {
            Frame f;
            long sliceNanos = FIRST_SLICE_NANOS;
            try {
                // in slices, as await's: between them a peer's refusal of this call ends the wait
                while (true) {
                    f = transport.receive(w(r.peer), stream, Math.min(deadline(), System.nanoTime() + sliceNanos), r);
                    if (f != null) {
                        break;
                    }
                    answerAndLook();
                    if (System.nanoTime() - deadlineNanos >= 0) {
                        break;
                    }
                    sliceNanos = Math.min(sliceNanos * 2, MAX_SLICE_NANOS);
                }
            } catch (InterruptedException e) {
                cancelPosted();
                Thread.currentThread().interrupt();
                throw new io.jccl.JcclException(self(), signature.op(), signature.sequence(), "rank " + self()
                        + ": " + signature.op().label() + " #" + signature.sequence() + " interrupted", e);
            } catch (RuntimeException e) {
                cancelPosted();
                throw e;
            }
            if (f == null) {
                missing.add(r.peer);
                continue;
            }
            try {
                check(r, f);
            } catch (RuntimeException e) {
                cancelPosted();
                throw e;
            }
            tally.outstanding.remove(r);
            if (!f.isPlaced()) {
                transport.release(f);
            }
        }
        return missing;
    }

    /**
     * One exchange with two peers: posts the receive from {@code from} into {@code in} (reduced with {@code op}, or
     * copied when null), sends {@code out} to {@code to}, then completes the receive. {@code in} and {@code out} must
     * not overlap: the receive may be filled while the send reads.
     */
    public void sendRecv(int to, Buf out, int from, Buf in, ReduceOp op) {
        Receive r = postRecv(from, in, op);
        send(to, out);
        complete(r);
    }

    /**
     * Posts the receive of the next message from {@code peer}, at the current step, into {@code dst} (reduced into
     * it with {@code op}, or copied when it is null), and returns at once; {@link #complete} waits for it. Receives
     * posted before the sends they overlap let a transport with reader threads place each payload straight into its
     * destination as it arrives. Receives from one peer complete in the order posted.
     */
    public Receive postRecv(int peer, Buf dst, ReduceOp op) {
        return postRecv(peer, dst, op, null);
    }

    /**
     * As {@link #postRecv(int, Buf, ReduceOp)}, {@code dst} becoming {@code base op payload} when {@code base} is
     * given (then {@code op} must be too): an out-of-place reduction that reads {@code base} once, just before each
     * piece is reduced, instead of a copy of it into {@code dst} beforehand.
     */
    public Receive postRecv(int peer, Buf dst, ReduceOp op, Buf base) {
        start();
        Receive r = new Receive(peer, step, phase, dst, op, base);
        reusable = false;
        tally.reusable = false;
        if (tally.outstanding == null) {
            tally.outstanding = new java.util.ArrayList<>(2);
        }
        tally.outstanding.add(r);
        transport.post(w(peer), stream, r);
        return r;
    }

    /** Waits for a receive {@link #postRecv posted} by this call, checks its header and completes its copy or reduction. */
    public void complete(Receive r) {
        Frame f;
        try {
            f = await(r);
            check(r, f);
        } catch (RuntimeException e) {
            cancelPosted(); // r too: it may still be posted (an abort from elsewhere ended the wait)
            throw e;
        }
        tally.outstanding.remove(r);
        if (!f.isPlaced()) {
            Buf dst = r.destination();
            if (dst.count() > 0) {
                Buf payload = new Buf(dst.dtype(), f.payload(), 0, dst.count());
                if (r.op() == null) {
                    payload.copyTo(dst, 0);
                } else {
                    if (r.base() != null) {
                        r.base().copyTo(dst, 0);
                    }
                    Reductions.reduce(r.op(), dst, payload);
                }
            }
            transport.release(f);
        }
    }

    /**
     * Cancels every receive this call posted and did not complete (the call failed), and those of its
     * {@link #detachedSubgroup}s, whose threads must have ended: no byte lands in their destinations after this
     * returns.
     */
    public void cancelOutstanding() {
        java.util.concurrent.ConcurrentLinkedQueue<CollectiveCall> detached = tally.detachedCalls;
        try {
            if (detached != null) {
                for (CollectiveCall d; (d = detached.poll()) != null; ) {
                    d.cancelOutstanding(); // should one throw, the finally still cancels this call's own
                }
            }
        } finally {
            cancelPosted();
        }
    }

    /**
     * Cancels the receives of this call's {@link #tally} that were posted and not completed, not those of its
     * {@link #detachedSubgroup}s, which another thread may be running.
     */
    private void cancelPosted() {
        java.util.ArrayList<Receive> outstanding = tally.outstanding;
        if (outstanding == null) {
            return;
        }
        for (Receive r : outstanding) {
            r.cancel();
            Frame f = r.result(); // a whole frame it ended with before: its array goes back to the pool
            if (f != null && !f.isPlaced() && !f.header().isAbort()) {
                transport.release(f);
            }
        }
        outstanding.clear();
    }

    /** A receive posted by this call: its peer and step, and what a header must say to be the one it waits for. */
    public final class Receive extends PostedReceive {
        private final int peer;
        private final int expectedStep;
        private final String expectedPhase;

        Receive(int peer, int step, String phase, Buf dst, ReduceOp op, Buf base) {
            super(dst, op, base);
            this.peer = peer;
            this.expectedStep = step;
            this.expectedPhase = phase;
        }

        @Override
        protected boolean accepts(FrameHeader h) {
            return difference(h, expectedStep, expectedPhase, destination().count()) == null;
        }
    }

    /** The first field in which {@code h} differs from what this call expects at {@code atStep}, or null. */
    private String[] difference(FrameHeader h, int atStep, String atPhase, int expectedCount) {
        String[] d = signature.firstDifference(h);
        if (d == null && h.step() != atStep) {
            d = new String[] {"step", Integer.toString(atStep), Integer.toString(h.step())};
        }
        if (d == null && h.payloadCount() != expectedCount) {
            d = new String[] {"payload elements at " + describeStep(atStep, atPhase),
                Integer.toString(expectedCount), Integer.toString(h.payloadCount())};
        }
        return d;
    }

    private void check(Receive r, Frame f) {
        FrameHeader h = f.header();
        if (f.isDeparture()) {
            // a peer that left during this call says only that it left; an abort recorded for this communicator
            // (the peer's own, sent before its goodbye, or another rank's) says why: raise that one
            throwAnyAbort();
        }
        if (h.isAbort()) {
            throw aborted(h.source(), new String((byte[]) f.payload(), StandardCharsets.UTF_8));
        }
        String[] d = difference(h, r.expectedStep, r.expectedPhase, r.destination().count());
        if (d != null) {
            throw mismatch(signature, w(r.peer), d, h);
        }
        long bytes = (long) h.payloadCount() * signature.dtype().sizeBytes();
        count(Counter.MESSAGES_RECEIVED, 1);
        count(Counter.BYTES_RECEIVED, bytes);
        tally.messagesReceived++;
        tally.bytesReceived += bytes;
        if (tally.peersReceived == null) {
            tally.peersReceived = new java.util.BitSet();
        }
        tally.peersReceived.set(w(r.peer));
    }

    /**
     * Waits for the next frame from {@code peer} until the deadline. While it waits it looks, at growing
     * intervals, at the oldest unread frame of every other peer: a frame of this sequence number with another
     * signature, or of an earlier one, means that peer is in a different call which may never send to this rank,
     * and is reported at once instead of at the deadline.
     */
    private Frame await(Receive r) {
        int peer = r.peer;
        long sliceNanos = FIRST_SLICE_NANOS;
        lastWaitedFor = w(peer);
        start(); // before the flight recorder learns where it waits
        if (recorder != null) {
            recorder.waiting(recordId, w(peer), r.expectedStep);
        }
        try {
            while (true) {
                long now = System.nanoTime();
                tally.lastClock = now; // the call a subgroup was made from keeps the reading
                Frame f = transport.receive(w(peer), stream, Math.min(deadline(), now + sliceNanos), r);
                if (f != null) {
                    return f;
                }
                answerAndLook(w(peer)); // first: a refusal heard in the last slice is the news, not the deadline
                if (System.nanoTime() - deadlineNanos >= 0) {
                    throw timedOut(w(peer), r.expectedStep, describeStep(r.expectedStep, r.expectedPhase));
                }
                if (Streams.isCollective(stream)) {
                    checkOtherPeers(w(peer));
                }
                sliceNanos = Math.min(sliceNanos * 2, MAX_SLICE_NANOS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new io.jccl.JcclException(self(), signature.op(), signature.sequence(), "rank " + self() + ": "
                    + signature.op().label() + " #" + signature.sequence() + " interrupted while waiting for rank "
                    + w(peer) + " at " + describeStep(r.expectedStep, r.expectedPhase), e);
        }
    }

    /**
     * The mismatch {@code d} (field, this rank's value, the peer's) of call {@code sig} (this one, or the one before
     * it whose agreement a rank checks late) with transport rank {@code peer}, whose header is {@code theirs} (null:
     * unknown); but where a refusal explains it (a bad argument, {@link ProgressExchange#refused}), the refusal,
     * which says why:
     * <ul>
     *   <li>a peer refused call {@code sig} (or the peer's), and its next call reached this rank before a look at the
     *       notice the peer sent first: a {@link PeerAbortedException} naming that peer;</li>
     *   <li>this rank refused the call of the peer's frame (an earlier sequence number): it says so.</li>
     * </ul>
     */
    private RuntimeException mismatch(Signature sig, int peer, String[] d, FrameHeader theirs) {
        try {
            start(); // a call that starts late has its flight recorder, and so reads the control stream, from here
            if (recorder != null) {
                ProgressExchange.answer(transport, recorder); // a notice waiting unread is read now
            }
            if (!Streams.isCollective(stream) && sig.op() == io.jccl.OpType.RECV) {
                int comm = Streams.communicatorOf(stream);
                ProgressExchange.Refusal r = ProgressExchange.sendRefusalOf(transport, comm, peer, sig.sequence());
                if (r != null) { // the peer refused the send this receive waits for, and its next send came first
                    return new PeerAbortedException(self(), sig.op(), sig.sequence(), r.rank, r.reason);
                }
                r = theirs == null ? null : ProgressExchange.receiveRefusalOf(transport, comm, peer, theirs.sequence());
                if (r != null) { // this rank refused the receive of the send that came
                    return new io.jccl.JcclException(self(), sig.op(), sig.sequence(), "rank " + self() + ": "
                            + sig.op().label() + " #" + sig.sequence() + ": met rank " + peer + "'s send #"
                            + theirs.sequence() + ", a receive this rank refused (" + r.reason + ")", null);
                }
            }
            if (Streams.isCollective(stream)) {
                int comm = Streams.communicatorOf(stream);
                ProgressExchange.Refusal r = ProgressExchange.refusalOf(transport, comm, sig.sequence());
                if (r == null && theirs != null) {
                    r = ProgressExchange.refusalOf(transport, comm, theirs.sequence());
                }
                if (r != null && r.rank != self()) {
                    return new PeerAbortedException(self(), sig.op(), sig.sequence(), r.rank, r.reason);
                }
                if (r != null) {
                    return new io.jccl.JcclException(self(), sig.op(), sig.sequence(), "rank " + self() + ": "
                            + sig.op().label() + " #" + sig.sequence() + ": met rank " + peer + "'s "
                            + Signature.of(theirs).op().label() + " #" + theirs.sequence() + ", a call this rank "
                            + "refused (" + r.reason + ")", null);
                }
            }
        } catch (RuntimeException e) {
            // nothing to add: the mismatch stands
        }
        return new CollectiveMismatchException(self(), sig.op(), sig.sequence(), peer, d[0], d[1], d[2]);
    }

    /**
     * Between two slices of a wait: answers the peers' questions ({@link ProgressExchange}) and raises the refusal of
     * this very call by a peer (a bad argument it threw), which it will never run: a {@link PeerAbortedException}
     * naming that rank, so that the communicator fails on every rank now rather than at this call's deadline.
     */
    private void answerAndLook() {
        answerAndLook(-1);
    }

    /** As {@link #answerAndLook()}; a receive waiting for transport rank {@code peer} looks for its send's refusal. */
    private void answerAndLook(int peer) {
        if (recorder != null) {
            ProgressExchange.answer(transport, recorder);
        }
        int comm = Streams.communicatorOf(stream);
        ProgressExchange.Refusal r = Streams.isCollective(stream)
                ? ProgressExchange.refusalOf(transport, comm, signature.sequence())
                : signature.op() == io.jccl.OpType.RECV && peer >= 0
                ? ProgressExchange.sendRefusalOf(transport, comm, peer, signature.sequence()) : null;
        if (r != null && r.rank != self()) {
            throw new PeerAbortedException(self(), signature.op(), signature.sequence(), r.rank, r.reason);
        }
    }

    /**
     * The timeout of this call, which waited for {@code peer} at {@code atStep}: on a collective stream, first asks
     * every rank of the communicator how far it got ({@link ProgressExchange}), for up to a quarter of the timeout
     * (0.2 to 2 s), so that the exception names the ranks that never reached the call; a peer's abort that arrives
     * meanwhile is raised instead.
     */
    private RuntimeException timedOut(int peer, int atStep, String where) {
        int comm = Streams.communicatorOf(stream);
        io.jccl.diag.FlightRecorder.Progress progress = recorder == null ? null : recorder.progressOf(comm);
        if (progress == null || !Streams.isCollective(stream)) {
            return new CollectiveTimeoutException(self(), signature.op(), signature.sequence(), peer, atStep, where,
                    timeout);
        }
        long window = Math.min(2_000_000_000L, Math.max(200_000_000L, timeout.toNanos() / 4));
        ProgressExchange.Report[] reports = ProgressExchange.ask(transport, recorder, comm, progress.members(),
                signature.sequence(), window, this::throwAnyAbort);
        String named = ProgressExchange.culprits(reports, signature.op(), signature.sequence(), window / 1_000_000);
        int culprit = ProgressExchange.firstCulprit(reports, signature.sequence());
        return new CollectiveTimeoutException(self(), signature.op(), signature.sequence(), culprit >= 0 ? culprit
                : peer, peer, atStep, where, timeout, named);
    }

    /** Raises the abort a peer sent for this call's communicator, if one waits (a departure is not one). */
    private void throwAnyAbort() {
        for (int p = 0; p < transport.size(); p++) {
            Frame abort = p == self() ? null : transport.pendingAbort(p, stream);
            if (abort != null && !abort.isDeparture()) {
                throw aborted(abort.header().source(), new String((byte[]) abort.payload(), StandardCharsets.UTF_8));
            }
        }
    }

    private void checkOtherPeers(int awaited) {
        // the transport's arena, or in a host subgroup the host's (whose ranks are this call's)
        io.jccl.transport.SharedArena a = hostArena != null ? hostArena : transport.arena();
        for (int p = 0; p < transport.size(); p++) { // every rank of the transport: all are in this call
            if (p == awaited || p == self()) {
                continue;
            }
            // a peer waiting in a shared-memory call of this communicator with this sequence number (read
            // consistently: a peer may be rewriting its slots right now). The arena is the transport's: a call of
            // another communicator over it (the rendezvous's own barrier, say) numbers its calls apart
            int in = hostArena != null ? indexOf(p) : p;
            FrameHeader published = a == null || in < 0 ? null : a.publishedSignature(in);
            String[] differs = published == null || published.sequence() != signature.sequence()
                    || published.stream() != stream ? null : signature.firstDifference(published);
            if (differs != null) {
                throw mismatch(signature, p, differs, published);
            }
            FrameHeader h = transport.peekHeader(p, stream);
            if (h == null || h.isAbort() || h.sequence() > signature.sequence()) {
                continue;
            }
            String[] d = signature.firstDifference(h);
            if (d != null) {
                throw mismatch(signature, p, d, h);
            }
        }
    }

    // ------------------------------------------------------------------ shared-memory rounds

    /** The transport's shared arena, or null when it has none. */
    public io.jccl.transport.SharedArena arena() {
        return members == null ? transport.arena() : hostArena;
    }

    /**
     * One arrival of a shared-memory round (step 0 on the call's first round, else 1): on the first round writes this call's signature into the
     * arena's slot {@code half}; publishes {@code round} as this rank's {@link io.jccl.transport.SharedArena#ARRIVED}
     * counter; waits for every rank to arrive; and on the first round compares every peer's signature with this
     * call's, so a rank whose call differs fails every rank with the field that differs. The caller has
     * {@link #settle settled} the round before.
     */
    public void arrive(io.jccl.transport.SharedArena a, long round, boolean firstRound) {
        step(firstRound ? 0 : 1, "shared-memory arrive");
        int half = (int) (round & 1);
        if (firstRound) {
            writeSignature(a, half);
        }
        a.publish(io.jccl.transport.SharedArena.ARRIVED, round);
        start(); // while the arrival crosses the cores
        awaitArena(a, io.jccl.transport.SharedArena.ARRIVED, round);
        if (firstRound) {
            compareSignatures(a, half, -1, signature);
        }
        a.settled(round);
    }

    /**
     * What a rank does before it writes anything of round {@code round} into the arena: makes sure that every rank
     * arrived at the round before (so that nobody still reads what this round overwrites) and, if this rank has not
     * seen that yet, compares their signatures of it. After a full round this costs nothing; after an
     * {@link #arriveEagerly eager} round it is where a rank that entered a different call is found, at its next
     * shared-memory call, as the eager round's root does not wait.
     */
    public void settle(io.jccl.transport.SharedArena a, long round) {
        long previous = round - 1;
        if (a.settledRound() >= previous) {
            return;
        }
        step(0, "shared-memory settle of the call before");
        awaitArena(a, -1, io.jccl.transport.SharedArena.ARRIVED, previous);
        compareSignatures(a, (int) (previous & 1), -1, null); // the eager call's, which the error names
        a.settled(previous);
    }

    /**
     * An eager round (each round of a shared-memory broadcast): writes this call's signature into slot {@code half},
     * publishes {@code round}, and then, unless this rank is {@code root}, waits for the root alone to arrive and
     * compares the root's signature with this call's. The root returns at once: it neither waits nor compares, and
     * the other ranks' signatures are compared when each rank next {@link #settle}s. The caller has settled the
     * round before and written the root's data into its buffer {@code half} before this.
     */
    public void arriveEagerly(io.jccl.transport.SharedArena a, long round, int root) {
        step(0, "shared-memory eager arrive");
        int half = publishArrival(a, round);
        if (rank() != root) {
            awaitArena(a, root, io.jccl.transport.SharedArena.ARRIVED, round);
            compareSignatures(a, half, root, signature);
        }
    }

    /**
     * An eager round that gathers to {@code root} (a reduce that fits one round): writes this call's signature into
     * slot {@code half} and publishes {@code round}; then {@code root} waits for every rank to arrive and compares
     * every rank's signature, while every other rank returns at once (its part is in its exchange buffer, which it
     * rewrites only two rounds later, after the root has arrived at the round in between). A rank whose call differs
     * fails the root here and every other rank when it next {@link #settle}s. The caller has settled the round
     * before and written its part into its buffer {@code half}.
     */
    public void arriveGathered(io.jccl.transport.SharedArena a, long round, int root) {
        step(0, "shared-memory eager arrive");
        int half = publishArrival(a, round);
        if (rank() == root) {
            awaitArena(a, io.jccl.transport.SharedArena.ARRIVED, round);
            compareSignatures(a, half, -1, signature);
            a.settled(round);
        }
    }

    /** Writes this call's signature into slot {@code round & 1} and publishes {@code round}; returns the slot. */
    private int publishArrival(io.jccl.transport.SharedArena a, long round) {
        int half = (int) (round & 1);
        writeSignature(a, half);
        a.publish(io.jccl.transport.SharedArena.ARRIVED, round);
        start(); // while the arrival crosses the cores
        return half;
    }

    /**
     * Writes this call's signature into this rank's slot {@code half} of the arena. The slot is read as a seqlock
     * ({@link io.jccl.transport.SharedArena#publishedSignature}): its plain writes must not become visible before
     * the counter this rank published last (a release store orders only what precedes it), or a reader on a weakly
     * ordered CPU could take a half-rewritten slot for a published one. A compiler barrier alone on x86.
     */
    private void writeSignature(io.jccl.transport.SharedArena a, int half) {
        java.lang.invoke.VarHandle.storeStoreFence();
        signature.writeHeader(FrameDescriptor.TYPE_DATA, rank(), 0, 0, stream, a.signatureSlot(half), 0);
    }

    /**
     * A barrier's round released by one rank: writes this call's signature into slot {@code half} and publishes
     * {@code round}; {@code releaser} waits for every rank to arrive and then publishes {@code round} as its
     * {@link io.jccl.transport.SharedArena#LEFT} counter, the release. Where ranks outnumber cores
     * ({@link io.jccl.transport.SharedArena#oversubscribed}) every other rank waits for that release alone, so the
     * releaser leaves first: a rooted call that follows (the root is usually the releaser) has published its data by
     * the time a descheduled rank runs again, instead of that rank waiting for the root to be scheduled (Open MPI's
     * barrier releases its ranks in the same order). Where they fit the cores every rank waits for every arrival
     * and they leave together, a cache-line transfer sooner. Then every rank compares every rank's signature, so a
     * mismatch fails every rank alike. The releaser publishes the release either way, so ranks that judged the
     * cores differently would still pass.
     */
    public void arriveReleased(io.jccl.transport.SharedArena a, long round, int releaser) {
        step(0, "shared-memory barrier");
        int half = publishArrival(a, round);
        if (rank() == releaser || !a.oversubscribed()) {
            awaitArena(a, io.jccl.transport.SharedArena.ARRIVED, round);
            if (rank() == releaser) {
                a.publish(io.jccl.transport.SharedArena.LEFT, round);
            }
        } else {
            awaitArena(a, releaser, io.jccl.transport.SharedArena.LEFT, round);
        }
        compareSignatures(a, half, -1, signature);
        a.settled(round);
    }

    /**
     * Compares the signature in slot {@code half} of every rank (or of {@code only}, unless -1) with this rank's in
     * that slot, which is {@code sig}, or (null) is read from the slot should a peer's differ: an eager call's, which
     * the error then names.
     */
    private void compareSignatures(io.jccl.transport.SharedArena a, int half, int only, Signature sig) {
        for (int p = only < 0 ? 0 : only; p < (only < 0 ? size() : only + 1); p++) {
            if (p == rank() || a.sameSignature(p, half)) {
                continue;
            }
            if (sig == null) {
                FrameHeader mine = a.signature(rank(), half);
                if (mine == null) {
                    throw new IllegalStateException("rank " + self() + ": its own shared-memory signature slot "
                            + half + " is unreadable");
                }
                sig = Signature.of(mine);
            }
            FrameHeader h = a.signature(p, half);
            String[] d = h == null ? new String[] {"signature", "a valid header", "unreadable"}
                    : sig.firstDifference(h);
            if (d != null) {
                throw mismatch(sig, w(p), d, h);
            }
        }
    }

    /**
     * Waits until every rank's arena counter {@code which} reaches {@code value}, until the call's deadline. While
     * it waits it looks, at growing intervals, for aborts and for peers in a different call (as {@link #await}). An
     * interrupt of the thread ends the wait with a {@link io.jccl.JcclException} saying so (its status kept set, as
     * {@link #await} keeps it).
     */
    public void awaitArena(io.jccl.transport.SharedArena a, int which, long value) {
        awaitArena(a, -1, which, value);
    }

    /** As {@link #awaitArena(io.jccl.transport.SharedArena, int, long)}, for rank {@code only}'s counter alone (-1: every rank's). */
    private void awaitArena(io.jccl.transport.SharedArena a, int only, int which, long value) {
        if (a.reached(only, which, value)) {
            return; // nothing to wait for: no clock reading, no flight-recorder entry
        }
        start(); // before the flight recorder learns where it waits
        long sliceNanos = FIRST_SLICE_NANOS;
        if (recorder != null) {
            recorder.waiting(recordId, only < 0 ? only : w(only), step);
        }
        while (true) {
            int behind;
            try {
                long now = System.nanoTime();
                tally.lastClock = now;
                long until = Math.min(deadline(), now + sliceNanos);
                behind = only < 0 ? a.await(which, value, until) : a.awaitRank(only, which, value, until);
            } catch (io.jccl.transport.PeerLostException e) {
                // a peer that failed first and then exited has usually sent its reason: report that, not its exit
                throwPendingAbort(a, only, which, value);
                throw new PeerAbortedException(self(), signature.op(), signature.sequence(), w(e.peer()),
                        e.getMessage());
            }
            if (behind < 0) {
                return;
            }
            // an interrupt whose abort is not this call's was another communicator's (a sub-group's over the same
            // arena): cleared before looking, so that one made meanwhile is either found now or ends the next wait
            a.clearInterrupt();
            throwPendingAbort(a, only, which, value);
            if (Thread.currentThread().isInterrupted()) { // the arena's wait returned for it; the status stays set
                throw new io.jccl.JcclException(self(), signature.op(), signature.sequence(), "rank " + self() + ": "
                        + signature.op().label() + " #" + signature.sequence() + " interrupted while waiting for rank "
                        + w(behind) + " at " + describeStep() + " (in the shared arena)", null);
            }
            if (Streams.isCollective(stream)) {
                checkOtherPeers(-1);
            }
            answerAndLook();
            if (System.nanoTime() - deadlineNanos >= 0) {
                throw timedOut(w(behind), step, describeStep());
            }
            sliceNanos = Math.min(sliceNanos * 2, MAX_SLICE_NANOS);
        }
    }

    /**
     * Throws the abort a peer sent (or the transport made for a lost peer) that is waiting for this call's
     * communicator, if any; an abort a peer sent comes first (see {@link io.jccl.transport.Inbox}). A peer that
     * closed cleanly counts only if it left before what this rank waits for happened: counter {@code which} of
     * rank {@code only} (or, with -1, of the peer itself) reaching {@code value}. A peer cannot finish its own
     * part of the call before that, so a departure after it is a peer that finished, not one that failed. In a
     * {@link #hostSubgroup} the ranks of the other hosts count too (a rank of another host that failed ends the
     * wait at once), but not their departures: they are not what this rank waits for.
     */
    private void throwPendingAbort(io.jccl.transport.SharedArena a, int only, int which, long value) {
        for (int p = 0; p < transport.size(); p++) {
            Frame abort = p == self() ? null : transport.pendingAbort(p, stream);
            if (abort == null) {
                continue;
            }
            int in = indexOf(p); // p among this call's ranks, which are the arena's; -1: not one of them
            if (abort.isDeparture() && (in < 0 || a.counter(only < 0 ? in : only, which) >= value)) {
                continue; // it closed after reaching what this rank waits for: finished, not failed
            }
            throw aborted(abort.header().source(), new String((byte[]) abort.payload(), StandardCharsets.UTF_8));
        }
    }

    /**
     * The failure of this call on an abort from the transport's {@code source} (its rank, or in a sub-group's
     * transport a process outside the group, named by its world rank: {@link SubTransport#outsiderWorldRank}).
     */
    private PeerAbortedException aborted(int source, String reason) {
        int outsider = transport instanceof SubTransport ? ((SubTransport) transport).outsiderWorldRank(source) : -1;
        return outsider >= 0 ? PeerAbortedException.outside(self(), signature.op(), signature.sequence(), outsider,
                reason) : new PeerAbortedException(self(), signature.op(), signature.sequence(), source, reason);
    }

    /** The rank of this call of the transport's rank {@code p}, or -1 when it is not in this call. */
    private int indexOf(int p) {
        if (members == null) {
            return p;
        }
        for (int i = 0; i < members.length; i++) {
            if (members[i] == p) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Marks this call as one of its communicator's sequence, run on the thread whose turn it is (the pipeline's):
     * it and the subgroups it makes on that thread count with {@link TrafficCounters#addInTurn}, without an atomic
     * instruction; a {@link #detachedSubgroup}, which another thread runs meanwhile, counts atomically.
     */
    public void countInTurn() {
        this.inTurn = true;
    }

    /** Adds to this call's operation's counter {@code c}: see {@link #countInTurn}. */
    private void count(Counter c, long delta) {
        if (inTurn) {
            counters.addInTurn(signature.op(), c, delta);
        } else {
            counters.add(signature.op(), c, delta);
        }
    }

    /** Counts shared-memory traffic: bytes this rank wrote for its peers and bytes it read from theirs. */
    public void countShared(long bytesWritten, long bytesRead) {
        count(Counter.BYTES_SENT, bytesWritten);
        count(Counter.BYTES_RECEIVED, bytesRead);
        tally.bytesSent += bytesWritten;
        tally.bytesReceived += bytesRead;
    }

    /** This call's traffic as JSON fields (for the trace): bytes, messages and peers, sent and received. */
    public String trafficJson() {
        return "\"bytesSent\":" + bytesSent + ",\"bytesReceived\":" + bytesReceived + ",\"messagesSent\":"
                + messagesSent + ",\"messagesReceived\":" + messagesReceived + ",\"peersSent\":"
                + ranks(peersSent) + ",\"peersReceived\":" + ranks(peersReceived);
    }

    /** {@code [0, 2]}: the ranks in {@code set} (none: null) as a JSON array. */
    private static String ranks(java.util.BitSet set) {
        return set == null ? "[]" : set.stream().boxed().collect(java.util.stream.Collectors.toList()).toString();
    }

    /** Human-readable position, for error messages: {@code step 3 (allgather) of algorithm RING}. */
    public String describeStep() {
        return describeStep(step, phase);
    }

    private String describeStep(int atStep, String atPhase) {
        return "step " + atStep + " (" + atPhase + ") of algorithm " + signature.algorithm();
    }
}
