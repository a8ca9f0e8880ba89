package io.jccl.transport;

import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;

/**
 * Memory that every rank of a transport can read directly: what the shared-memory algorithms
 * ({@code io.jccl.algorithm.SharedMemory*}) are written against instead of messages. Ranks that are processes on
 * one host get it from {@link io.jccl.transport.shm.ShmTransport} (a region of each rank's segment, laid out by
 * {@link io.jccl.transport.shm.ShmSegmentDescriptor}); ranks that are threads get it from
 * {@link io.jccl.transport.local.QueueMesh} (heap arrays).
 *
 * <p>Each rank owns two exchange buffers ({@code half} 0 and 1, used alternately so that a rank can fill one while
 * slow peers still read the other), a few monotonically increasing counters, and a signature slot per half. A rank
 * writes only its own buffers, counters and signature; it reads everyone's. {@link #publish} is a release store
 * and {@link #counter} an acquire load, so data put before a publish is visible to a peer that has read the
 * published value.
 *
 * <p>Not thread-safe: one collective call at a time uses it, between {@link #enter()} and {@link #exit()}.
 */
public interface SharedArena {
    /** Counter a rank publishes when its input is in its exchange buffer. */
    int ARRIVED = 0;
    /** Counter a rank publishes when its share of the result is in its exchange buffer. */
    int REDUCED = 1;
    /**
     * Counter a rank publishes when it has finished reading its peers' exposed buffers; also the release of a
     * shared-memory barrier, published by the barrier's releasing rank once every rank has arrived; and, in an
     * allreduce where some ranks exposed a registered buffer and others did not, "my input is in my exchange buffer
     * now" at the call's first round.
     */
    int LEFT = 2;
    /** Number of counters per rank. */
    int COUNTERS = 3;
    /** The pseudo-half that names a rank's {@link #expose exposed} buffer in {@link #get} and {@link #reduce}. */
    int EXPOSED = 2;

    int rank();

    int size();

    /**
     * Whether this arena's ranks outnumber the cores they run on, counted from what every rank sees alike (the
     * processors of the one JVM of thread ranks; the union of the processes' affinities on shm). Only a matter of
     * timing: ranks that disagreed would still complete every call.
     */
    boolean oversubscribed();

    /** Bytes of one exchange buffer. */
    int bufferBytes();

    /** The next round number (1, 2, ...): every rank draws the same sequence, one per round of every call. */
    long nextRound();

    /** The round {@link #nextRound} last returned (0 before the first). */
    long currentRound();

    /**
     * The latest round at which this rank saw every rank arrive and compared their signatures (0: none). Before it
     * writes round R, a rank makes sure of round R - 1 (an eager round lets ranks run one round apart).
     */
    long settledRound();

    /** Records that every rank arrived at {@code round} with this rank's signature. */
    void settled(long round);

    /**
     * Marks the start of a call; fails if the transport is closed. Must be paired with {@link #exit()}. No lock: the
     * calls of the one communicator that uses an arena (its transport's; a sub-group's transport has none) already
     * run one at a time, in its sequence order, on the thread whose turn it is, and each turn's end happens-before
     * the next turn's start ({@code OrderedExecution}); within a call only that thread touches the arena.
     */
    void enter();

    void exit();

    /** Makes a wait in progress ({@link #await}) and every later one return at once, as at a slice's end. */
    void interrupt();

    /**
     * Ends {@link #interrupt}'s effect: for a wait that returned for an interrupt and found no abort for its own call,
     * one meant for another communicator over the same arena (a sub-group's, whose close or failure interrupts its
     * parent's transport). Otherwise every later wait of the arena returned at once for good: a busy loop that never
     * looked for dead peers.
     */
    void clearInterrupt();

    /**
     * Whether peers can read a caller's own buffer in place ({@link #expose}): ranks that are threads can; ranks
     * that are processes read only what is in shared memory.
     */
    boolean canExpose();

    /**
     * Lets peers read {@code b} in place, as half {@link #EXPOSED} of this rank, until the next call to expose; the
     * caller must not change {@code b} until every peer is done reading (a {@link #LEFT} synchronisation).
     */
    void expose(Buf b);

    /**
     * A tensor of {@code count} elements that peers can read in place: in this rank's registered region of shared
     * memory (processes), or a plain array (threads, which read any array in place).
     *
     * @throws IllegalArgumentException when the registered region has no room left
     */
    io.jccl.Tensor allocate(io.jccl.DataType dtype, int count);

    /**
     * If {@code t} lives in this rank's registered region, lets peers read it in place as half {@link #EXPOSED}
     * (until the next expose) and returns true; otherwise returns false and changes nothing.
     */
    boolean exposeRegistered(io.jccl.Tensor t);

    /**
     * Tells the peers that this rank's buffer from {@link #exposeRegistered} is its input to the call whose round is
     * {@code round}; before it arrives there. A no-op where {@link #exposeRegistered} never exposes.
     */
    default void markExposed(long round) {
    }

    /**
     * Whether rank {@code r} arrived at {@code round} with a registered buffer exposed ({@link #markExposed}) rather
     * than its input in its exchange buffer; read after every rank arrived there.
     */
    default boolean exposedFor(int r, long round) {
        return false;
    }

    /** Copies elements {@code [at, at + n)} of rank {@code r}'s exposed buffer into this rank's exposed buffer. */
    void copyExposed(int r, int at, int n, io.jccl.DataType dtype);

    /**
     * Copies {@code src} into rank {@code r}'s exposed buffer from element {@code at}, where {@link #canExpose}: a
     * reduce's slice written straight into its root's buffer (by the one rank that reads and writes that slice).
     */
    default void putExposed(int r, int at, io.jccl.buffer.Buf src) {
        throw new UnsupportedOperationException("this arena cannot write into a peer's buffer");
    }

    /**
     * Copies {@code src} into this rank's exchange buffer {@code half} (or its exposed buffer), starting at element
     * {@code at}.
     */
    void put(int half, int at, Buf src);

    /** Copies {@code dst.count()} elements of rank {@code r}'s buffer {@code half} from element {@code at}. */
    default void get(int r, int half, int at, Buf dst) {
        get(r, half, at, dst, 0, dst.count());
    }

    /**
     * Copies {@code n} elements of rank {@code r}'s buffer {@code half} from element {@code at} into {@code dst}
     * from its element {@code to}: {@code get(r, half, at, dst.slice(to, n))} without making the slice.
     */
    void get(int r, int half, int at, Buf dst, int to, int n);

    /** {@code acc = acc op (rank r's buffer half, from element at)}, element-wise over {@code acc.count()}. */
    void reduce(int r, int half, int at, Buf acc, ReduceOp op);

    /**
     * This rank's signature slot {@code half}, where it writes the header that describes its current call: a
     * little-endian buffer of {@link FrameDescriptor#HEADER_LENGTH} bytes, written at index 0 with absolute puts
     * ({@link FrameDescriptor#encodeAt(byte, int, int, int, int, int, int, long, long, int, int, int,
     * java.nio.ByteBuffer, int)}). The same buffer on every call, so that a call makes no object to describe itself.
     */
    java.nio.ByteBuffer signatureSlot(int half);

    /**
     * Whether rank {@code r}'s signature slot {@code half} describes the same call as this rank's (every field but
     * the source); false also when it cannot tell cheaply, and the caller then compares decoded headers.
     */
    boolean sameSignature(int r, int half);

    /**
     * Rank {@code r}'s signature slot {@code half}. Only consistent for a slot whose round the caller has seen
     * published and that cannot have been rewritten since (see {@link #publishedSignature}).
     */
    FrameHeader signature(int r, int half);

    /**
     * The signature in the slot of rank {@code r}'s latest published round, read so that a slot being rewritten is
     * never returned half old and half new: null if {@code r} moved on while it was read, or has published nothing.
     */
    FrameHeader publishedSignature(int r);

    /** Publishes {@code value} in this rank's counter {@code which} (a release store). */
    void publish(int which, long value);

    /** Rank {@code r}'s counter {@code which} (an acquire load). */
    long counter(int r, int which);

    /**
     * Whether counter {@code which} of every rank (or of rank {@code only}, unless -1) has reached {@code value}
     * already: a wait's first look, before it reads the clock or tells the flight recorder where it waits.
     */
    default boolean reached(int only, int which, long value) {
        if (only >= 0) {
            return counter(only, which) >= value;
        }
        for (int r = 0; r < size(); r++) {
            if (counter(r, which) < value) {
                return false;
            }
        }
        return true;
    }

    /**
     * Waits until every rank's counter {@code which} is at least {@code value}, or {@link System#nanoTime()}
     * passes {@code untilNanos}. Returns -1 when every rank got there, else the lowest rank that has not. Throws
     * {@link PeerLostException} when a peer is known to be gone. Waiting spins only while ranks do not outnumber
     * cores, then yields, then parks (see {@link WaitStrategy}). Returns early, as at the deadline, when the calling
     * thread is interrupted; its interrupt status stays set, and the caller must end its wait on it.
     */
    int await(int which, long value, long untilNanos);

    /**
     * As {@link #await}, for rank {@code r}'s counter alone: returns -1 when it got there, else {@code r}.
     */
    int awaitRank(int r, int which, long value, long untilNanos);
}
