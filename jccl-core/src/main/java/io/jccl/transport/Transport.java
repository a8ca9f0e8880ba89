package io.jccl.transport;

import io.jccl.buffer.Buf;

/**
 * The point-to-point layer every algorithm is written against: one rank's end of a full mesh of ordered,
 * reliable links (the seed's {@code Mesh} with {@code send(dst, tensor)} and {@code recv(src)}).
 *
 * <p>Contract: frames from one source on one stream arrive in the order sent. {@link #send} returns once the
 * payload has been copied or written out, so the caller may reuse its buffer. {@link #receive} waits until a frame
 * from {@code src} arrives, an abort frame from any peer arrives (it is returned instead), or the deadline passes
 * (it returns {@code null}). Implementations: {@link io.jccl.transport.local.QueueMesh} (threads in one JVM),
 * {@link io.jccl.transport.shm.ShmTransport} (processes on one host), {@link io.jccl.transport.tcp.TcpTransport}
 * (processes on any hosts), all on {@link AbstractTransport}; {@link SubTransport} (a sub-group's view).
 * {@code TransportContractTest} runs this contract over each.
 */
public interface Transport extends AutoCloseable {

    int rank();

    int size();

    /** A short name for messages and traces: {@code local}, {@code shm}, {@code tcp}. */
    String name();

    /**
     * Sends a frame: {@code header}, then the elements of {@code payload} ({@code header.payloadCount()} of them),
     * over an array or over memory (a direct buffer, which a socket can write as it is).
     */
    void send(int dst, FrameHeader header, Buf payload);

    /**
     * As {@link #send(int, FrameHeader, Buf)}, but a transport whose buffer towards {@code dst} is bounded (a
     * shared-memory ring) waits for room only until {@link System#nanoTime()} passes {@code deadlineNanos}, and then
     * returns false: the frame may be partly sent, and the caller fails its call (and with it the communicator). A
     * transport that never waits for its receiver long (unbounded queues, the kernel's socket buffers written by
     * threads of its own) sends as {@code send} does and returns true.
     *
     * @param dst the receiving rank
     * @param header the frame's header
     * @param payload the frame's elements
     * @param deadlineNanos when to give up waiting for room, on {@link System#nanoTime()}'s clock
     * @return true once the frame is sent, false if the deadline passed first
     */
    default boolean send(int dst, FrameHeader header, Buf payload, long deadlineNanos) {
        send(dst, header, payload);
        return true;
    }

    /**
     * Drops what this transport keeps for communicator {@code communicatorId} (its queues of frames, an abort it
     * received), which has closed: a program that makes a sub-group per step and closes it must not grow them
     * without bound. Frames that arrive for it later are kept as for any communicator.
     *
     * @param communicatorId the closed communicator's id
     */
    default void forget(int communicatorId) {
    }

    /**
     * The next frame from {@code src} on {@code stream} (see {@link Streams}), an abort frame for the stream's
     * communicator from any peer, or {@code null} once {@link System#nanoTime()} passes {@code deadlineNanos}.
     */
    Frame receive(int src, int stream, long deadlineNanos) throws InterruptedException;

    /**
     * Posts a receive of the next frame from {@code src} on {@code stream} (see {@link PostedReceive}), so that a
     * transport with reader threads can write its payload straight into the destination when it arrives. Receives
     * posted for one (source, stream) take its frames in the order posted. The default posts nothing: the frame is
     * then received whole by {@link #receive(int, int, long, PostedReceive)}.
     */
    default void post(int src, int stream, PostedReceive posted) {
    }

    /**
     * Waits for {@code posted} ({@link #post posting} it first if needed): the frame it ended with (its payload
     * possibly {@link Frame#isPlaced() placed} already), an abort, or {@code null} at the deadline, when it stays
     * posted (a later call waits on; its caller {@link PostedReceive#cancel cancels} it when it gives up). The default
     * is {@link #receive(int, int, long)}: a whole frame the caller copies.
     */
    default Frame receive(int src, int stream, long deadlineNanos, PostedReceive posted) throws InterruptedException {
        return receive(src, stream, deadlineNanos);
    }

    /**
     * The header of the oldest frame from {@code src} on {@code stream} that {@link #receive} has not yet returned,
     * or null; never blocks. Used while waiting on one peer to notice that another peer is in a different call.
     */
    FrameHeader peekHeader(int src, int stream);

    /**
     * The caller is done with a frame's payload (copied or reduced out of it); the transport may reuse the
     * array. The default keeps nothing.
     */
    default void release(Frame frame) {
    }

    /**
     * The abort that {@link #receive} from {@code src} on {@code stream} would return once no data frames are
     * queued before it (an abort of the stream's communicator, a lost peer, {@code src} having left), or null.
     * Consumes nothing; used by waits that receive no frames (the shared-memory algorithms).
     */
    Frame pendingAbort(int src, int stream);

    /**
     * Has a send that waits for room towards a peer (a bounded buffer that the peer does not read, as a shared-memory
     * ring) ask {@code probe} now and then, with the header of the frame it sends, why it should stop: an exception
     * to throw, or null to go on waiting. The layer above answers with what it learned about the frame's call (a peer
     * that refused it, {@code ProgressExchange}); the probe must not send. The default ignores it: a transport whose
     * sends never wait for a peer's reads (queues between threads, TCP with reader threads) has no such wait.
     */
    default void watchStuckSends(java.util.function.Function<FrameHeader, RuntimeException> probe) {
    }

    /**
     * Memory every rank can read directly, when the ranks share a host and this transport provides it (threads,
     * shared memory); null otherwise (TCP, sub-groups).
     */
    default SharedArena arena() {
        return null;
    }

    /**
     * In a transport across hosts: memory that the ranks of this rank's host can read directly, whose rank i is the
     * i-th of them in increasing order of this transport's ranks ({@link #hostOf}); null otherwise. The hierarchical
     * algorithms run their phases within a host through it ({@code CollectiveCall#hostSubgroup}); nothing else
     * does, so its rounds are the world communicator's alone (a sub-group's transport has none).
     */
    default SharedArena hostArena() {
        return null;
    }

    /**
     * Which host each rank is on, when this transport knows: element {@code r} is rank {@code r}'s host, hosts
     * numbered 0, 1, ... in the order of their lowest rank; null when it does not know (TCP between ranks that
     * made no co-location proof). The default: one host when the ranks share an {@link #arena() arena}.
     */
    default int[] hostOf() {
        return arena() != null ? new int[size()] : null;
    }

    /**
     * Best effort, never blocks for long: delivers an abort frame ({@code header}, whose stream names the
     * communicator) carrying {@code reason} to each rank in {@code peers}.
     */
    void abortPeers(int[] peers, FrameHeader header, String reason);

    /**
     * Ends this rank's own wait in progress on {@code abort}'s communicator (its header's stream): from now on a
     * {@link #receive} on that communicator's streams returns {@code abort}, {@link #pendingAbort} reports it, and a
     * wait in the {@link #arena() arena} returns within microseconds so that its caller sees it. Used by
     * {@code close()} and {@code abort()} of a communicator whose call is still in flight on another thread.
     */
    void interrupt(Frame abort);

    @Override
    void close();
}
