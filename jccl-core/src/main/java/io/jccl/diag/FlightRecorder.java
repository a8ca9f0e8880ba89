package io.jccl.diag;

import io.jccl.Algorithm;
import io.jccl.DataType;
import io.jccl.OpType;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One rank's last calls (torch's flight recorder): every collective and point-to-point call of the rank's
 * communicators, in a ring of {@code capacity} entries (2,000 by default; {@code JCCL_FLIGHT_RECORDER_ENTRIES}),
 * each with its communicator, sequence number, op, dtype, count, root or peer, algorithm, state
 * ({@code scheduled}, {@code started}, {@code completed}, {@code failed}), timestamps, and for a call still
 * waiting the step and the peer it waits for. Cheap enough to stay on: the entries are made once and reused, a
 * call writes plain fields and publishes its state with a release store; a reader ({@link #toJson}, from any
 * thread) may see an entry half rewritten by a call 2,000 calls later, never a torn state.
 *
 * <p>It also keeps, per communicator, the last sequence number a rank entered: what a rank that timed out asks
 * its peers for, to name the ranks that never reached the call ({@link #progress}).
 *
 * <p>The JSON ({@link #toJson}) uses the field names of torch's flight recorder where they mean the same thing
 * ({@code record_id}, {@code pg_id}, {@code collective_seq_id}, {@code p2p_seq_id}, {@code profiling_name},
 * {@code time_created_ns}, {@code time_discovered_started_ns}, {@code time_discovered_completed_ns},
 * {@code duration_ms}, {@code state}, {@code input_sizes}, {@code input_dtypes}, {@code timeout_ms},
 * {@code is_p2p}, {@code retired}); jccl's own are {@code algorithm}, {@code root}, {@code peer},
 * {@code waiting_for_rank}, {@code waiting_at_step} and {@code error}. docs/diagnostics.md shows one.
 */
public final class FlightRecorder {
    /** The default number of entries. */
    public static final int DEFAULT_CAPACITY = 2000;
    /** The dump format's version. */
    public static final String VERSION = "jccl-fr-1";

    public static final int SCHEDULED = 0;
    public static final int STARTED = 1;
    public static final int COMPLETED = 2;
    public static final int FAILED = 3;
    private static final String[] STATES = {"scheduled", "started", "completed", "failed"};

    private static final VarHandle STATE;
    private static final VarHandle ID;
    private static final VarHandle ENTERED;
    private static final VarHandle CURRENT;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            STATE = l.findVarHandle(Entry.class, "state", int.class);
            ID = l.findVarHandle(Entry.class, "id", long.class);
            ENTERED = l.findVarHandle(Progress.class, "entered", long.class);
            CURRENT = l.findVarHandle(Progress.class, "current", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * One call; reused once the ring wraps (an update checks {@link #id} first). Written with plain and release
     * stores (a release store costs no fence on x86, a volatile one does), read with acquire loads.
     */
    private static final class Entry {
        long id = -1;
        int comm;
        boolean p2p;
        OpType op;
        long seq;
        DataType dtype;
        long count;
        int rootOrPeer;
        Algorithm algorithm;
        long timeoutMs;
        long createdNanos;
        long startedNanos;
        long completedNanos;
        int waitingFor = -1;
        int waitingStep = -1;
        String error;
        int state;
    }

    /** What one communicator of this rank has reached: read by peers that time out. */
    public static final class Progress {
        private final int comm;
        private final int[] members;
        /** Written by the one thread whose turn it is (calls of a communicator enter in sequence order). */
        private long entered = -1;
        private long current = -1;

        Progress(int comm, int[] members) {
            this.comm = comm;
            this.members = members;
        }

        /** The communicator's id. */
        public int comm() {
            return comm;
        }

        /** The transport rank of each of the communicator's ranks. */
        public int[] members() {
            return members.clone();
        }

        /** The highest sequence number this rank has entered (taken its turn for), or -1. */
        public long entered() {
            return (long) ENTERED.getAcquire(this);
        }
    }

    private final int rank;
    /** A power of two of at least the capacity, so that an id's slot is a mask away; the dump shows capacity. */
    private final Entry[] ring;
    private final int mask;
    private final int capacity;
    private final AtomicLong next = new AtomicLong();
    private final Map<Integer, Progress> progress = new ConcurrentHashMap<>();
    /** Epoch nanoseconds minus {@code System.nanoTime()}, at creation. */
    private final long wallOffsetNanos;

    /** A recorder for rank {@code rank} keeping its last {@code capacity} calls (0: only the progress). */
    public FlightRecorder(int rank, int capacity) {
        if (capacity < 0) {
            throw new IllegalArgumentException("capacity must be >= 0, got " + capacity);
        }
        this.rank = rank;
        this.capacity = capacity;
        int length = capacity == 0 ? 0 : Integer.highestOneBit(Math.max(1, capacity - 1)) << 1;
        this.ring = new Entry[capacity == 1 ? 1 : length];
        this.mask = ring.length - 1;
        for (int i = 0; i < ring.length; i++) {
            ring[i] = new Entry();
        }
        java.time.Instant now = java.time.Instant.now();
        this.wallOffsetNanos = now.getEpochSecond() * 1_000_000_000L + now.getNano() - System.nanoTime();
    }

    /** The rank whose calls this records (its transport's rank). */
    public int rank() {
        return rank;
    }

    /** The progress of communicator {@code comm}, whose ranks are {@code members} (transport ranks), made once. */
    public Progress progress(int comm, int[] members) {
        return progress.computeIfAbsent(comm, c -> new Progress(c, members.clone()));
    }

    /** Drops the progress of communicator {@code comm}, which has closed (its records stay in the ring). */
    public void forget(int comm) {
        progress.remove(comm);
    }

    /** The progress of communicator {@code comm}, or null if this rank has none. */
    public Progress progressOf(int comm) {
        return progress.get(comm);
    }

    /**
     * Records a call as scheduled and returns its record id (-1 when the ring has no room at all). {@code rootOrPeer}
     * is the root of a rooted collective, the peer of a send or receive, the tag of an allReduceCoalesced's layout
     * (-2 or less) or of one of jccl's own allgathers (-3 to -5; {@link io.jccl.step.Signature#EXCHANGE_SPLIT}), else
     * -1. {@code nowNanos} is
     * {@code System.nanoTime()} when the call was made, or 0 for a call that runs at once (its start time serves):
     * the recorder reads no clock itself, the caller's readings serve (a clock read costs about 37 ns here, a
     * tenth of a small call).
     */
    public long scheduled(int comm, boolean p2p, OpType op, long seq, DataType dtype, long count, int rootOrPeer,
                          Algorithm algorithm, long timeoutMs, long nowNanos) {
        if (ring.length == 0) {
            return -1;
        }
        long id = next.getAndIncrement(); // calls of several communicators and threads share the ring
        Entry e = ring[(int) id & mask];
        ID.setRelease(e, -1L); // a reader skips it while it is rewritten
        e.comm = comm;
        e.p2p = p2p;
        e.op = op;
        e.seq = seq;
        e.dtype = dtype;
        e.count = count;
        e.rootOrPeer = rootOrPeer;
        e.algorithm = algorithm;
        e.timeoutMs = timeoutMs;
        e.createdNanos = nowNanos;
        e.startedNanos = 0;
        e.completedNanos = 0;
        e.waitingFor = -1;
        e.waitingStep = -1;
        e.error = null;
        STATE.setRelease(e, SCHEDULED);
        ID.setRelease(e, id);
        return id;
    }

    private Entry entry(long id) {
        if (id < 0 || ring.length == 0) {
            return null;
        }
        Entry e = ring[(int) id & mask];
        return (long) ID.getAcquire(e) == id ? e : null;
    }

    /**
     * The call {@code id} has its turn and runs, at {@code nowNanos}; {@code p} (its communicator's progress, or
     * null) has entered it.
     */
    public void started(long id, Progress p, long seq, long nowNanos) {
        if (p != null) {
            ENTERED.setRelease(p, seq);
            CURRENT.setRelease(p, id);
        }
        Entry e = entry(id);
        if (e != null) {
            e.startedNanos = nowNanos;
            if (e.createdNanos == 0) {
                e.createdNanos = nowNanos;
            }
            STATE.setRelease(e, STARTED);
        }
    }

    /** The call {@code id} now waits for transport rank {@code peer} at {@code step}. */
    public void waiting(long id, int peer, int step) {
        Entry e = entry(id);
        if (e != null) {
            e.waitingFor = peer;
            e.waitingStep = step;
        }
    }

    /**
     * The call {@code id} completed; {@code nowNanos} is the last clock reading of the call (when it last began
     * to wait, for a call that waited: "discovered", as torch's field says), at least its start.
     */
    public void completed(long id, long nowNanos) {
        Entry e = entry(id);
        if (e != null) {
            e.completedNanos = Math.max(nowNanos, e.startedNanos);
            e.waitingFor = -1;
            STATE.setRelease(e, COMPLETED);
        }
    }

    /** The call {@code id} failed with {@code error} (the clock is read: failures are rare). */
    public void failed(long id, String error) {
        Entry e = entry(id);
        if (e != null) {
            e.completedNanos = System.nanoTime();
            e.error = error;
            STATE.setRelease(e, FAILED);
        }
    }

    /** The state of the call {@code id} of communicator {@code comm}'s progress, as a word, or null if overwritten. */
    public String stateOf(long id) {
        Entry e = entry(id);
        return e == null ? null : STATES[(int) STATE.getAcquire(e)];
    }

    /** The step the current call of {@code p} waits at and the rank it waits for, {-1, -1} when not waiting. */
    public int[] waitOf(Progress p) {
        Entry e = entry((long) CURRENT.getAcquire(p));
        if (e == null || (int) STATE.getAcquire(e) != STARTED) {
            return new int[] {-1, -1};
        }
        return new int[] {e.waitingStep, e.waitingFor};
    }

    /**
     * This rank's record as JSON: {@code version}, {@code rank}, {@code world_size}, {@code reason} (why it was
     * written), {@code pg_status} (per communicator: {@code last_enqueued_collective}, {@code last_started_collective}
     * ...) and {@code entries}, oldest first.
     */
    public String toJson(int worldSize, String reason) {
        StringBuilder b = new StringBuilder(256 + 400 * (int) Math.min(next.get(), capacity));
        b.append("{\"version\":\"").append(VERSION).append("\",\"rank\":").append(rank).append(",\"world_size\":")
                .append(worldSize).append(",\"reason\":");
        string(b, reason);
        b.append(",\"dumped_ns\":").append(wallOffsetNanos + System.nanoTime()).append(",\"pg_status\":{");
        boolean first = true;
        for (Progress p : progress.values()) {
            b.append(first ? "" : ",").append('"').append(p.comm).append("\":{\"members\":")
                    .append(java.util.Arrays.toString(p.members).replace(" ", ""))
                    .append(",\"last_started_collective\":").append(p.entered()).append('}');
            first = false;
        }
        b.append("},\"entries\":[");
        long end = next.get();
        long start = Math.max(0, end - capacity);
        first = true;
        for (long id = start; id < end; id++) {
            Entry e = entry(id);
            if (e == null) {
                continue;
            }
            int state = (int) STATE.getAcquire(e);
            b.append(first ? "" : ",").append("\n{\"record_id\":").append(id).append(",\"pg_id\":").append(e.comm)
                    .append(e.p2p ? ",\"p2p_seq_id\":" : ",\"collective_seq_id\":").append(e.seq)
                    .append(",\"profiling_name\":\"jccl:").append(e.op.label()).append("\",\"is_p2p\":").append(e.p2p)
                    .append(",\"state\":\"").append(STATES[state]).append("\",\"retired\":").append(state >= COMPLETED)
                    .append(",\"input_dtypes\":[\"").append(e.dtype == null ? "" : e.dtype.torchName())
                    .append("\"],\"input_sizes\":[[").append(e.count).append("]],\"algorithm\":\"")
                    .append(e.algorithm == null ? "" : e.algorithm.name()).append('"')
                    .append(e.p2p ? ",\"peer\":" : ",\"root\":").append(e.rootOrPeer)
                    .append(",\"timeout_ms\":").append(e.timeoutMs)
                    .append(",\"time_created_ns\":").append(wallOffsetNanos + e.createdNanos);
            if (e.startedNanos != 0) {
                b.append(",\"time_discovered_started_ns\":").append(wallOffsetNanos + e.startedNanos);
            }
            if (e.completedNanos != 0) {
                b.append(",\"time_discovered_completed_ns\":").append(wallOffsetNanos + e.completedNanos);
                if (e.startedNanos != 0) {
                    b.append(",\"duration_ms\":").append((e.completedNanos - e.startedNanos) / 1e6);
                }
            }
            if (state != COMPLETED && e.waitingFor >= 0) { // a failed call: the rank it last waited for
                b.append(",\"waiting_for_rank\":").append(e.waitingFor).append(",\"waiting_at_step\":")
                        .append(e.waitingStep);
            }
            if (e.error != null) {
                b.append(",\"error\":");
                string(b, e.error);
            }
            b.append('}');
            first = false;
        }
        return b.append("\n]}\n").toString();
    }

    /** Appends {@code s} as a JSON string (null as null), escaped as the bandwidth trace escapes it. */
    static void string(StringBuilder b, String s) {
        b.append(s == null ? "null" : io.jccl.instrument.TraceWriter.quote(s));
    }
}
