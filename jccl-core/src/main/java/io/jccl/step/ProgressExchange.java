package io.jccl.step;

import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.diag.FlightRecorder;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.PeerLostException;
import io.jccl.transport.Streams;
import io.jccl.transport.SubTransport;
import io.jccl.transport.Transport;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * Who is stuck, asked before a timeout is raised: the rank whose call timed out asks every rank of the call's
 * communicator how far it got (the last call it entered there, and the step and rank it waits for), and names the
 * ranks that never reached the call, not the neighbour it happened to wait for. A rank answers while it waits in
 * any call of its own (every slice of {@link CollectiveCall}'s waits), so a rank that is stopped, hung, or busy
 * outside jccl does not answer: that is what names it.
 *
 * <p>The questions and answers are frames of the frame layout ({@link FrameDescriptor}), type DATA, on a stream of
 * their own ({@link #STREAM}, communicator {@link #CONTROL_ID}), between the ranks of the world's transport. Their
 * payload is INT64:
 * <pre>
 *   question: [ 0 = QUESTION, communicator id, sequence number asked about, question id ]
 *   answer:   [ 1 = ANSWER,   communicator id, last sequence number entered (-1 none, -2 unknown communicator),
 *               step waited at (-1: not waiting), rank waited for (of that communicator, -1: none), question id ]
 *   refusal:  [ 2 = REFUSED,  communicator id, sequence number refused, operation id, refusing rank (of that
 *               communicator), n = reason's UTF-8 bytes, the bytes, 8 to a long, little end first ... ]
 * </pre>
 *
 * <p>A refusal is not a question: a rank that refused a collective call (a bad argument of its own, which it
 * throws) tells every other rank of the communicator ({@link #refused}). Whichever wait of the receiving process
 * reads it (of any communicator, even one made for the rendezvous) keeps it in this process's store of refusals
 * for the world's transport, so that a notice read before its communicator exists here still counts; a rank that
 * waits in that very call raises it at its next look ({@link #refusalOf}, every slice of a wait), instead of
 * waiting for the refusing rank until its deadline. A rank that refused the call too never runs it, so the
 * notices change nothing there. A send refused (a bad tensor to a rank that exists) is told to its receiver alone,
 * under the send's number with that receiver, which a receive of that number raises the same way. The store keeps
 * the last {@link #KEPT_REFUSALS} refusals of each communicator (of each sender, for sends).
 *
 * <p>Any thread of the asking process may read an answer off the stream (every wait of every communicator answers
 * questions, and so drains it): the question id, unique in the asking process, takes the answer to the ask that is
 * waiting for it, whichever thread read it, and an answer to an ask that has ended is dropped.
 */
public final class ProgressExchange {
    /** The communicator id of the questions' stream: no communicator gets it. */
    public static final int CONTROL_ID = 0x3FFFFFFE;
    /** The stream of questions and answers. */
    public static final int STREAM = Streams.pointToPoint(CONTROL_ID);
    private static final long QUESTION = 0;
    private static final long ANSWER = 1;
    private static final long REFUSED = 2;
    /** The most of a refusal's reason sent, in bytes (a longer one is cut). */
    private static final int REASON_BYTES = 2048;
    /** The refusals kept per communicator: the most recent calls'. */
    static final int KEPT_REFUSALS = 1024;
    /**
     * The refusals this process heard or made, by world transport (weakly: a closed job's go with it), communicator
     * id and sequence number; guarded by itself.
     */
    private static final java.util.Map<Transport, java.util.Map<Long, java.util.TreeMap<Long, Refusal>>> REFUSALS =
            new java.util.WeakHashMap<>();
    /** Whether any refusal was ever stored: until one is, a look is this one volatile read. */
    private static volatile boolean anyRefusal;

    /** A collective call that a rank refused: which rank (of its communicator), and why. */
    public static final class Refusal {
        /** The rank, of the call's communicator, that refused the call. */
        public final int rank;
        /** What its refusal says, as {@link #refusal} words it. */
        public final String reason;

        Refusal(int rank, String reason) {
            this.rank = rank;
            this.reason = reason;
        }
    }
    /** Question ids of this process. */
    private static final java.util.concurrent.atomic.AtomicLong QUESTIONS = new java.util.concurrent.atomic.AtomicLong();
    /** The asks in progress in this process, by question id: their answers, by world rank. */
    private static final java.util.Map<Long, java.util.concurrent.atomic.AtomicReferenceArray<long[]>> PENDING =
            new java.util.concurrent.ConcurrentHashMap<>();

    private ProgressExchange() {
    }

    /** What one rank said (or that it said nothing). */
    public static final class Report {
        /** The rank, of the call's communicator. */
        public final int rank;
        /** Whether it answered within the window. */
        public final boolean answered;
        /** The last sequence number it entered on the communicator (-1: none, -2: it has no such communicator). */
        public final long entered;
        /** The step it waits at, or -1. */
        public final long step;
        /** The rank (of the communicator) it waits for, or -1. */
        public final long waitingFor;
        /** Why it cannot answer (it died, closed), or null. */
        public final String gone;

        Report(int rank, boolean answered, long entered, long step, long waitingFor, String gone) {
            this.rank = rank;
            this.answered = answered;
            this.entered = entered;
            this.step = step;
            this.waitingFor = waitingFor;
            this.gone = gone;
        }
    }

    private static Transport root(Transport t) {
        return t instanceof SubTransport ? ((SubTransport) t).root() : t;
    }

    /**
     * Sends a question or an answer, waiting for room at most until {@code deadlineNanos}: the peer may be the one
     * that stopped receiving (its buffer from this rank full), and a send without a deadline waited for it forever.
     * Returns whether it was sent.
     */
    private static boolean send(Transport world, int dst, long[] payload, long deadlineNanos) {
        FrameHeader h = new Signature(OpType.BARRIER, -1, DataType.INT64, payload.length, -1, null, null)
                .header(FrameDescriptor.TYPE_DATA, world.rank(), 0, payload.length, STREAM);
        return world.send(dst, h, new io.jccl.buffer.Buf(DataType.INT64, payload, 0, payload.length), deadlineNanos);
    }

    /**
     * Answers every question waiting for this rank, from what {@code recorder} knows; hands answers to the asks of
     * this process that wait for them, drops stray ones. Never waits; never throws (a peer that cannot be told is
     * left alone).
     */
    public static void answer(Transport transport, FlightRecorder recorder) {
        Transport world = root(transport);
        if (anyHeld) {
            java.util.List<long[]> held;
            synchronized (HELD) {
                held = HELD.remove(world);
                anyHeld = !HELD.isEmpty();
            }
            if (held != null) {
                for (long[] q : held) {
                    reply(world, (int) q[0], java.util.Arrays.copyOfRange(q, 1, q.length), recorder);
                }
            }
        }
        for (int src = 0; src < world.size(); src++) {
            if (src != world.rank()) {
                drain(world, src, recorder);
            }
        }
    }

    /**
     * Questions read by a wait that may not send ({@link #stuckSend}), by world transport, each as its source then
     * its payload: the next {@link #answer} answers them. Guarded by itself.
     */
    private static final java.util.Map<Transport, java.util.List<long[]>> HELD = new java.util.WeakHashMap<>();
    private static volatile boolean anyHeld;

    /**
     * Has every send of {@code transport}'s world that waits for room towards a peer (a full shared-memory ring)
     * look, now and then, for a refusal of its call by any rank: a rank that refused the call never reads that
     * call's frames, and without this the sender waited until that rank's next call or its own deadline. The wait
     * then throws {@link RefusedCall}, which {@link CollectiveCall} raises as it raises a refusal heard in any other
     * wait. Idempotent.
     */
    public static void watchStuckSends(Transport transport) {
        Transport world = root(transport);
        world.watchStuckSends(h -> stuckSend(world, h));
    }

    /**
     * A send of {@code world} that waits for room, its frame's header {@code h}: reads the control stream (a question
     * is held for the next {@link #answer}: this thread is in a send and may not send) and returns the refusal of the
     * frame's call, or null. Only collective calls: a refused receive tells no sender.
     */
    private static RuntimeException stuckSend(Transport world, FrameHeader h) {
        if (!Streams.isCollective(h.stream())) {
            return null;
        }
        for (int src = 0; src < world.size(); src++) {
            if (src != world.rank()) {
                drain(world, src, null);
            }
        }
        Refusal r = refusalOf(world, Streams.communicatorOf(h.stream()), h.sequence());
        return r == null ? null : new RefusedCall(r);
    }

    /**
     * Thrown by a send that waited for room towards a peer when a rank refused the send's call ({@link
     * #watchStuckSends}); {@link CollectiveCall} turns it into the {@code PeerAbortedException} of that refusal.
     */
    public static final class RefusedCall extends RuntimeException {
        private static final long serialVersionUID = 1L;
        /** @serial the refusal */
        private final transient Refusal refusal;

        RefusedCall(Refusal refusal) {
            super(refusal.reason, null, false, false);
            this.refusal = refusal;
        }

        public Refusal refusal() {
            return refusal;
        }
    }

    /**
     * Reads the frames waiting from {@code src}: answers its questions; an answer goes to the ask of this process
     * whose question id it carries, if that still waits. Returns why {@code src} is gone (it died, left), or null.
     */
    private static String drain(Transport world, int src, FlightRecorder recorder) {
        while (true) {
            Frame f;
            try {
                f = world.receive(src, STREAM, System.nanoTime());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } catch (RuntimeException e) { // the peer is gone: nothing to answer
                return e.getMessage() == null ? e.toString() : e.getMessage();
            }
            if (f == null) {
                return null;
            }
            if (f.header().isAbort()) {
                return f.payload() instanceof byte[]
                        ? new String((byte[]) f.payload(), java.nio.charset.StandardCharsets.UTF_8) : "it is gone";
            }
            long[] p = f.payload() instanceof long[] ? ((long[]) f.payload()).clone() : null;
            world.release(f);
            if (p == null || p.length < 4) {
                continue;
            }
            if (p[0] == QUESTION) {
                if (recorder == null) { // read by a wait that may not send: the next answer() answers it
                    long[] q = new long[p.length + 1];
                    q[0] = src;
                    System.arraycopy(p, 0, q, 1, p.length);
                    synchronized (HELD) {
                        HELD.computeIfAbsent(world, w -> new java.util.ArrayList<>()).add(q);
                        anyHeld = true;
                    }
                } else {
                    reply(world, src, p, recorder);
                }
            } else if (p[0] == REFUSED && p.length >= 6) {
                noteRefusal(world, p);
            } else if (p[0] == ANSWER && p.length >= 6) {
                java.util.concurrent.atomic.AtomicReferenceArray<long[]> answers = PENDING.get(p[5]);
                if (answers != null) {
                    answers.set(src, p);
                }
            }
        }
    }

    /** Answers question {@code p} from {@code src} with what {@code recorder} knows. Never throws. */
    private static void reply(Transport world, int src, long[] p, FlightRecorder recorder) {
        FlightRecorder.Progress progress = recorder.progressOf((int) p[1]);
        long entered = progress == null ? -2 : progress.entered();
        int[] wait = progress == null ? new int[] {-1, -1} : recorder.waitOf(progress);
        try {
            send(world, src, new long[] {ANSWER, p[1], entered, wait[0], wait[1], p[3]},
                    System.nanoTime() + 10_000_000L); // never waits long: unsent, the asker decides without it
        } catch (RuntimeException e) {
            // it cannot be told: it learns nothing, as if this rank had not answered
        }
    }

    /**
     * Rank {@code rank} of communicator {@code comm} (whose ranks are {@code members}, world ranks in communicator
     * order) refused its call {@code seq} of {@code op} with {@code reason}: keeps that here (a peer's frame of the
     * call that reaches this rank's next call is then explained) and tells every other rank. Waits for room at most
     * 100 ms per peer; never throws (a peer that cannot be told waits for its deadline, as before). Reads the
     * control stream first, so that where every rank refuses call after call their notices do not pile up unread.
     */
    public static void refused(Transport transport, FlightRecorder recorder, int comm, int[] members, int rank,
                               long seq, OpType op, String reason) {
        Transport world = root(transport);
        store(world, key(comm, op, rank), seq, new Refusal(rank, refusal(rank, op, seq, reason)));
        if (recorder != null) {
            answer(world, recorder);
        }
        byte[] text = reason.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        int n = Math.min(text.length, REASON_BYTES);
        long[] payload = new long[6 + (n + 7) / 8];
        payload[0] = REFUSED;
        payload[1] = comm;
        payload[2] = seq;
        payload[3] = op.id();
        payload[4] = rank;
        payload[5] = n;
        for (int i = 0; i < n; i++) {
            payload[6 + i / 8] |= (text[i] & 0xFFL) << (8 * (i % 8));
        }
        for (int m : members) {
            if (m == world.rank()) {
                continue;
            }
            try {
                send(world, m, payload, System.nanoTime() + 100_000_000L);
            } catch (RuntimeException e) {
                // a peer that is gone or cannot be told: it learns nothing from this rank
            }
        }
    }

    /** How a refusal reads, on the refusing rank and its peers alike. */
    private static String refusal(int rank, OpType op, long seq, String reason) {
        return "rank " + rank + " refused its " + op.label() + " #" + seq + ": " + reason;
    }

    /** Keeps the refusal {@code p} that a peer sent. */
    private static void noteRefusal(Transport world, long[] p) {
        if (p[3] < 0 || p[3] >= OpType.values().length) {
            return;
        }
        int n = (int) Math.min(Math.max(0, p[5]), 8L * (p.length - 6));
        byte[] text = new byte[n];
        for (int i = 0; i < n; i++) {
            text[i] = (byte) (p[6 + i / 8] >>> (8 * (i % 8)));
        }
        int rank = (int) p[4];
        OpType op = OpType.fromId((int) p[3]);
        store(world, key(comm(p[1]), op, rank), p[2], new Refusal(rank, refusal(rank, op, p[2],
                new String(text, java.nio.charset.StandardCharsets.UTF_8))));
    }

    private static int comm(long id) {
        return (int) id;
    }

    /**
     * Where a refusal is kept: a collective call's under its communicator, a send's under its communicator and
     * sender (sends are numbered per pair of ranks).
     */
    private static long key(int comm, OpType op, int rank) {
        return op == OpType.SEND ? pointToPoint(comm, rank, false) : id(comm);
    }

    /** A communicator id as a stream carries it (31 bits: {@link Streams#communicatorOf}). */
    private static long id(int comm) {
        return comm & 0x7FFFFFFFL;
    }

    /** The key of the sends from {@code peer}, or of this rank's receives from it ({@code receives}). */
    private static long pointToPoint(int comm, int peer, boolean receives) {
        return 1L << 62 | (receives ? 1L << 61 : 0) | id(comm) << 24 | (peer & 0xFFFFFFL);
    }

    private static void store(Transport world, long comm, long seq, Refusal r) {
        synchronized (REFUSALS) {
            java.util.TreeMap<Long, Refusal> calls = REFUSALS.computeIfAbsent(world, w -> new java.util.HashMap<>())
                    .computeIfAbsent(comm, c -> new java.util.TreeMap<>());
            calls.putIfAbsent(seq, r);
            while (calls.size() > KEPT_REFUSALS) {
                calls.pollFirstEntry();
            }
            anyRefusal = true;
        }
    }

    /**
     * The refusal of call {@code seq} of communicator {@code comm} over {@code transport} (a sub-group's: its
     * world's) that this process heard or made, or null. One volatile read while no refusal was ever stored.
     */
    public static Refusal refusalOf(Transport transport, int comm, long seq) {
        return refusal(transport, id(comm), seq);
    }

    /**
     * The refusal of send {@code seq} from rank {@code sender} of communicator {@code comm} over {@code transport},
     * that this process heard, or null: what a receive from {@code sender} looks for.
     */
    public static Refusal sendRefusalOf(Transport transport, int comm, int sender, long seq) {
        return refusal(transport, pointToPoint(comm, sender, false), seq);
    }

    /**
     * This rank refused its receive {@code seq} from rank {@code src} of communicator {@code comm} (a bad tensor): kept
     * here alone (no sender waits for a receive), so that the send of that number, met by this rank's next receive,
     * is explained ({@link #receiveRefusalOf}).
     */
    public static void refusedReceive(Transport transport, int comm, int self, int src, long seq, String reason) {
        store(root(transport), pointToPoint(comm, src, true), seq, new Refusal(self,
                refusal(self, OpType.RECV, seq, reason)));
    }

    /** This rank's refusal of its receive {@code seq} from rank {@code src} of communicator {@code comm}, or null. */
    public static Refusal receiveRefusalOf(Transport transport, int comm, int src, long seq) {
        return refusal(transport, pointToPoint(comm, src, true), seq);
    }

    private static Refusal refusal(Transport transport, long key, long seq) {
        if (!anyRefusal) {
            return null;
        }
        Transport world = root(transport);
        synchronized (REFUSALS) {
            java.util.Map<Long, java.util.TreeMap<Long, Refusal>> keys = REFUSALS.get(world);
            java.util.TreeMap<Long, Refusal> calls = keys == null ? null : keys.get(key);
            return calls == null ? null : calls.get(seq);
        }
    }

    /** Drops the refusals of communicator {@code comm}, which has closed. */
    public static void forget(Transport transport, int comm) {
        if (!anyRefusal) {
            return;
        }
        Transport world = root(transport);
        synchronized (REFUSALS) {
            java.util.Map<Long, java.util.TreeMap<Long, Refusal>> keys = REFUSALS.get(world);
            if (keys != null) { // the collectives' and every sender's
                keys.keySet().removeIf(k -> (k >>> 62 == 0 ? k : k >>> 24 & 0x7FFFFFFFL) == id(comm));
            }
        }
    }

    /**
     * Asks every other rank of communicator {@code comm} (ranks {@code members}, world ranks in communicator order)
     * how far it got, answering their questions meanwhile, for up to {@code windowNanos} or until all have
     * answered; {@code stop} is run between looks (it throws to end the wait, e.g. on a peer's abort). The reports
     * are in communicator rank order, this rank's own left null.
     */
    public static Report[] ask(Transport transport, FlightRecorder recorder, int comm, int[] members, long seq,
                               long windowNanos, Runnable stop) {
        Transport world = root(transport);
        long id = QUESTIONS.getAndIncrement();
        java.util.concurrent.atomic.AtomicReferenceArray<long[]> answers =
                new java.util.concurrent.atomic.AtomicReferenceArray<>(world.size());
        PENDING.put(id, answers);
        try {
            return ask(world, recorder, comm, members, seq, windowNanos, stop, id, answers);
        } finally {
            PENDING.remove(id);
        }
    }

    private static Report[] ask(Transport world, FlightRecorder recorder, int comm, int[] members, long seq,
                                long windowNanos, Runnable stop, long id,
                                java.util.concurrent.atomic.AtomicReferenceArray<long[]> answers) {
        String[] gone = new String[world.size()];
        long sendDeadline = System.nanoTime() + windowNanos / 2; // one for all: several full buffers add no time
        for (int m : members) {
            if (m == world.rank()) {
                continue;
            }
            try {
                if (!send(world, m, new long[] {QUESTION, comm, seq, id}, sendDeadline)) {
                    gone[m] = "its buffer from this rank stayed full while this rank asked (up to "
                            + windowNanos / 2_000_000 + " ms): it stopped receiving, stopped, hung, or busy outside jccl";
                }
            } catch (PeerLostException e) {
                gone[m] = e.getMessage();
            } catch (RuntimeException e) {
                gone[m] = e.getMessage() == null ? e.toString() : e.getMessage();
            }
        }
        long end = System.nanoTime() + windowNanos;
        while (true) {
            boolean all = true;
            for (int m : members) {
                if (m == world.rank() || gone[m] != null) {
                    continue;
                }
                String why = drain(world, m, recorder);
                long[] a = answers.get(m);
                if (a != null && a[1] != comm) { // not this question's (its id is): dropped, unless one came since
                    answers.compareAndSet(m, a, null);
                    a = null;
                }
                if (a == null) {
                    if (why != null) {
                        gone[m] = why;
                    } else {
                        all = false;
                    }
                }
            }
            answer(world, recorder); // the ranks outside this communicator that ask too, and answers just come
            if (all || System.nanoTime() - end >= 0) {
                break;
            }
            stop.run();
            LockSupport.parkNanos(1_000_000L);
        }
        Report[] out = new Report[members.length];
        for (int i = 0; i < members.length; i++) {
            int m = members[i];
            if (m == world.rank()) {
                continue;
            }
            long[] a = answers.get(m);
            out[i] = a == null ? new Report(i, false, -1, -1, -1, gone[m]) : new Report(i, true, a[2], a[3], a[4], null);
        }
        return out;
    }

    /**
     * The sentence that names the ranks that never reached call {@code seq} (of {@code op}), and what the others
     * wait for; null when every rank entered it (then the wait itself is the news).
     */
    public static String culprits(Report[] reports, OpType op, long seq, long windowMillis) {
        List<String> missing = new ArrayList<>();
        List<Integer> waiting = new ArrayList<>();
        StringBuilder waits = new StringBuilder();
        for (Report r : reports) {
            if (r == null) {
                continue;
            }
            if (!r.answered) {
                missing.add("rank " + r.rank + " never entered " + op.label() + " #" + seq + " ("
                        + (r.gone != null ? r.gone : "it did not answer within " + windowMillis
                        + " ms: stopped, hung, or busy outside jccl") + ")");
            } else if (r.entered < seq) {
                missing.add("rank " + r.rank + " never entered " + op.label() + " #" + seq + " ("
                        + (r.entered == -2 ? "it has no such communicator" : r.entered < 0 ? "it entered no call yet"
                        : "its last call is #" + r.entered) + ")");
            } else {
                waiting.add(r.rank);
                if (r.entered == seq && r.waitingFor >= 0) {
                    waits.append(waits.length() == 0 ? "" : ", ").append("rank ").append(r.rank).append(" for rank ")
                            .append(r.waitingFor);
                }
            }
        }
        if (missing.isEmpty()) {
            return null;
        }
        StringBuilder b = new StringBuilder(String.join("; ", missing));
        if (!waiting.isEmpty()) {
            b.append("; ").append(waiting.size() == 1 ? "rank " : "ranks ")
                    .append(waiting.toString().replaceAll("[\\[\\]]", "")).append(waiting.size() == 1 ? " is" : " are")
                    .append(" in it too").append(waits.length() == 0 ? "" : " (waiting: " + waits + ")");
        }
        return b.toString();
    }

    /** The first rank {@link #culprits} names, or -1. */
    public static int firstCulprit(Report[] reports, long seq) {
        for (Report r : reports) {
            if (r != null && (!r.answered || r.entered < seq)) {
                return r.rank;
            }
        }
        return -1;
    }
}
