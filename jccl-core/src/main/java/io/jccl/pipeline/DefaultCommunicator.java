package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import io.jccl.Work;
import io.jccl.instrument.TraceWriter;
import io.jccl.instrument.TrafficCounters;
import io.jccl.transport.SharedArena;
import io.jccl.transport.Transport;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Objects;

/**
 * The one pipeline behind every public call: validate locally (IllegalArgumentException, no data sent; a refused
 * collective call still takes its sequence number and tells the peers, see {@link ArgumentChecks}), take a
 * sequence number, resolve the algorithm, wait for this call's turn (calls run in sequence order whether
 * synchronous or asynchronous), run it against the transport, and on any failure abort the communicator and
 * tell every peer.
 *
 * <p>This class puts the parts together and answers the public API: {@link CallFactory} validates a call
 * ({@link ArgumentChecks}) and resolves its algorithm through the registry, {@link OrderedExecution} runs it in
 * sequence, {@link FailurePropagation} fails, aborts and closes, {@link CallTrace} traces, {@link PointToPoint}
 * sends and receives, {@link SubGroups} splits.
 */
public final class DefaultCommunicator implements Communicator {
    private final Transport transport;
    private final TrafficCounters counters = new TrafficCounters();
    private final CallTrace trace;
    private final FailurePropagation failures;
    private final CallFactory calls;
    private final OrderedExecution execution;
    private final PointToPoint pointToPoint;
    private final SubGroups subGroups;
    private final Diagnostics diagnostics;
    /** Whether this communicator made {@link #diagnostics} (a world communicator) and so ends it. */
    private final boolean ownsDiagnostics;
    private final int communicatorId;

    /** The id of the communicator that {@link #connectBarrier} runs on: no sub-group gets it. */
    static final int BOOTSTRAP_ID = 0x3FFFFFFF;

    /**
     * The barrier that ends a rendezvous, on a communicator of its own over {@code transport} (id
     * {@link #BOOTSTRAP_ID}, untraced, a message algorithm that leaves the shared arena alone), so that it takes no
     * sequence number of the world communicator: the user's first call is #0 in every error and trace.
     */
    public static void connectBarrier(Transport transport, CommunicatorConfig config) {
        bootstrap(transport, config).barrier(CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.DISSEMINATION));
    }

    /**
     * Instead of {@link #connectBarrier}, where this rank cannot finish connecting: the peers' barrier fails at
     * once with {@code reason} ("rank 1 aborted the communicator: ..."), not later or without a reason.
     */
    public static void abortConnect(Transport transport, CommunicatorConfig config, String reason) {
        bootstrap(transport, config).abort(reason);
    }

    /** The communicator of {@link #connectBarrier} and {@link #abortConnect}. */
    private static DefaultCommunicator bootstrap(Transport transport, CommunicatorConfig config) {
        return new DefaultCommunicator(transport, BOOTSTRAP_ID, config.withTrace(null), null,
                new Diagnostics(transport.rank(), transport.size(), config, false));
    }

    /** The world communicator (id 0) over {@code transport}. */
    public DefaultCommunicator(Transport transport, CommunicatorConfig config) {
        this(transport, 0, config);
    }

    /**
     * A communicator over {@code transport} whose frames travel on the streams of {@code communicatorId}, which
     * every member must agree on and no other live communicator over the same ranks may use.
     */
    public DefaultCommunicator(Transport transport, int communicatorId, CommunicatorConfig config) {
        this(transport, communicatorId, config, null, null);
    }

    /**
     * A sub-group's communicator ({@link SubGroups}), writing to its parent's trace (null: none) and flight
     * recorder (null: a world communicator, which makes its own).
     */
    DefaultCommunicator(Transport transport, int communicatorId, CommunicatorConfig config, TraceWriter parentTrace,
                        Diagnostics parentDiagnostics) {
        this.transport = Objects.requireNonNull(transport, "transport");
        Objects.requireNonNull(config, "config");
        this.communicatorId = communicatorId;
        this.trace = new CallTrace(config, transport, communicatorId, parentTrace);
        this.ownsDiagnostics = parentDiagnostics == null;
        this.diagnostics = parentDiagnostics != null ? parentDiagnostics
                : new Diagnostics(transport.rank(), transport.size(), config, true);
        this.failures = new FailurePropagation(transport, communicatorId, diagnostics);
        this.calls = new CallFactory(transport, config);
        this.execution = new OrderedExecution(transport, communicatorId, counters, failures, trace, diagnostics,
                worldRanks(transport), calls);
        calls.checks().refusals(execution::refuse);
        io.jccl.step.ProgressExchange.watchStuckSends(transport); // a send stuck towards a refusing rank ends
        this.pointToPoint = new PointToPoint(transport, communicatorId, config, counters, calls.checks(), failures,
                diagnostics);
        this.subGroups = new SubGroups(this, transport, communicatorId, config, trace.writer(), diagnostics);
    }

    /** The id of the streams this communicator's frames travel on (0: a world communicator). */
    int communicatorId() {
        return communicatorId;
    }

    /** The world rank (the recorder's numbering) of each rank of {@code t}. */
    static int[] worldRanks(Transport t) {
        int[] ranks = new int[t.size()];
        for (int i = 0; i < ranks.length; i++) {
            ranks[i] = t instanceof io.jccl.transport.SubTransport ? ((io.jccl.transport.SubTransport) t).worldRank(i)
                    : i;
        }
        return ranks;
    }

    /**
     * This rank's flight record as JSON (see {@code docs/diagnostics.md}): the last calls of this communicator,
     * of the communicator it was split from and of every sub-group of theirs.
     */
    @Override
    public String flightRecorderJson() {
        return diagnostics.json("asked for by the program");
    }

    @Override
    public java.nio.file.Path dumpFlightRecorder() {
        java.nio.file.Path f = diagnostics.dump("asked for by the program");
        if (f == null && diagnostics.file() == null) {
            throw new IllegalStateException("dumpFlightRecorder: JCCL_FLIGHT_RECORDER_DIR is not set; "
                    + "flightRecorderJson() returns the record instead");
        }
        return f;
    }

    @Override
    public int rank() {
        return transport.rank();
    }

    @Override
    public int size() {
        return transport.size();
    }

    @Override
    public String transportName() {
        return transport.name();
    }

    @Override
    public TrafficCounters counters() {
        return counters;
    }

    @Override
    public Tensor allocate(DataType dtype, int count) {
        Objects.requireNonNull(dtype, "dtype");
        if (count < 0) {
            throw new IllegalArgumentException("allocate: count must be >= 0, got " + count);
        }
        SharedArena a = transport.arena();
        if (a != null) {
            return a.allocate(dtype, count);
        }
        // no arena (sockets): direct memory in the wire's byte order, which the socket writes from and reads into
        long bytes = (long) count * dtype.sizeBytes();
        if (bytes > Integer.MAX_VALUE) { // a buffer holds at most 2 GiB; said as the shared-memory arena says it
            throw new IllegalArgumentException("allocate: " + count + " x " + dtype + " is " + bytes + " bytes, over "
                    + "the 2 GiB a buffer can hold");
        }
        return Tensor.of(ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN), dtype);
    }

    @Override
    public Algorithm algorithmFor(OpType op, DataType dtype, long count) {
        return calls.choose(op, dtype, count, Algorithm.AUTO);
    }

    /** The AUTO policy of this communicator (see {@link AlgorithmSelector}). */
    public AlgorithmSelector selector() {
        return calls.selector();
    }

    // ------------------------------------------------------------------ collectives

    @Override
    public void allReduce(Tensor tensor, ReduceOp op, CollectiveOptions options) {
        execution.runSync(calls.allReduce(tensor, op, options));
    }

    @Override
    public Work allReduceAsync(Tensor tensor, ReduceOp op, CollectiveOptions options) {
        return execution.runAsync(calls.allReduce(tensor, op, options));
    }

    @Override
    public void allReduceCoalesced(List<Tensor> tensors, ReduceOp op, CollectiveOptions options) {
        execution.runSync(calls.allReduceCoalesced(tensors, op, options));
    }

    @Override
    public Work allReduceCoalescedAsync(List<Tensor> tensors, ReduceOp op, CollectiveOptions options) {
        return execution.runAsync(calls.allReduceCoalesced(tensors, op, options));
    }

    @Override
    public void broadcast(Tensor tensor, int root, CollectiveOptions options) {
        execution.runSync(calls.broadcast(tensor, root, options));
    }

    @Override
    public Work broadcastAsync(Tensor tensor, int root, CollectiveOptions options) {
        return execution.runAsync(calls.broadcast(tensor, root, options));
    }

    @Override
    public void allGather(Tensor input, Tensor output, CollectiveOptions options) {
        execution.runSync(calls.allGather(input, output, options));
    }

    /** An allgather of jccl's own, tagged {@code exchange} ({@link CallFactory#allGather(Tensor, Tensor,
     * CollectiveOptions, int)}). */
    void exchange(Tensor input, Tensor output, int exchange) {
        execution.runSync(calls.allGather(input, output, CollectiveOptions.DEFAULT, exchange));
    }

    @Override
    public Work allGatherAsync(Tensor input, Tensor output, CollectiveOptions options) {
        return execution.runAsync(calls.allGather(input, output, options));
    }

    @Override
    public void reduceScatter(Tensor input, Tensor output, ReduceOp op, CollectiveOptions options) {
        execution.runSync(calls.reduceScatter(input, output, op, options));
    }

    @Override
    public Work reduceScatterAsync(Tensor input, Tensor output, ReduceOp op, CollectiveOptions options) {
        return execution.runAsync(calls.reduceScatter(input, output, op, options));
    }

    @Override
    public void reduce(Tensor tensor, int root, ReduceOp op, CollectiveOptions options) {
        execution.runSync(calls.reduce(tensor, root, op, options));
    }

    @Override
    public Work reduceAsync(Tensor tensor, int root, ReduceOp op, CollectiveOptions options) {
        return execution.runAsync(calls.reduce(tensor, root, op, options));
    }

    @Override
    public void gather(Tensor input, Tensor output, int root, CollectiveOptions options) {
        execution.runSync(calls.gather(input, output, root, options));
    }

    @Override
    public Work gatherAsync(Tensor input, Tensor output, int root, CollectiveOptions options) {
        return execution.runAsync(calls.gather(input, output, root, options));
    }

    @Override
    public void scatter(Tensor input, Tensor output, int root, CollectiveOptions options) {
        execution.runSync(calls.scatter(input, output, root, options));
    }

    @Override
    public Work scatterAsync(Tensor input, Tensor output, int root, CollectiveOptions options) {
        return execution.runAsync(calls.scatter(input, output, root, options));
    }

    @Override
    public void allToAll(Tensor input, Tensor output, CollectiveOptions options) {
        execution.runSync(calls.allToAll(input, output, options));
    }

    @Override
    public Work allToAllAsync(Tensor input, Tensor output, CollectiveOptions options) {
        return execution.runAsync(calls.allToAll(input, output, options));
    }

    @Override
    public void barrier(CollectiveOptions options) {
        execution.runSync(calls.barrier(options));
    }

    @Override
    public void monitoredBarrier(java.time.Duration timeout) {
        execution.runSync(calls.monitoredBarrier(timeout));
    }

    @Override
    public Work barrierAsync(CollectiveOptions options) {
        return execution.runAsync(calls.barrier(options));
    }

    // ------------------------------------------------------------------ sub-groups, point to point

    @Override
    public Communicator split(int color, int key) {
        return subGroups.split(color, key);
    }

    @Override
    public Communicator newGroup(int... ranks) {
        return subGroups.newGroup(ranks);
    }

    @Override
    public byte[][] allGatherV(byte[] data) {
        int[] lengths = lengths("allGatherV", data, 0);
        byte[][] out = new byte[size()][];
        execution.runSync(calls.allGatherV(data, lengths, out));
        return out;
    }

    @Override
    public byte[][] gatherV(byte[] data, int root) {
        int[] lengths = lengths("gatherV", data, root);
        byte[][] out = rank() == root ? new byte[size()][] : null;
        execution.runSync(calls.gatherV(data, lengths, out, root));
        return out;
    }

    /**
     * The first call of {@code what} (allGatherV, gatherV): every rank's length and root, exchanged before any check,
     * so that a rank whose data is null or whose root is out of range or differs is refused on every rank alike,
     * naming it, with an {@link IllegalArgumentException} that leaves the communicator usable (a rank that refused
     * alone left its peers waiting in this exchange until their deadline). Returns the lengths.
     */
    private int[] lengths(String what, byte[] data, int root) {
        int p = size();
        int[] all = new int[2 * p];
        exchange(Tensor.of(new int[] {data == null ? -1 : data.length, root}), Tensor.of(all),
                io.jccl.step.Signature.EXCHANGE_LENGTHS);
        java.util.List<String> refused = new java.util.ArrayList<>();
        int[] lengths = new int[p];
        for (int r = 0; r < p; r++) {
            lengths[r] = all[2 * r];
            int theirs = all[2 * r + 1];
            if (lengths[r] == -1) {
                refused.add("rank " + r + " passed null data");
            }
            if (theirs < 0 || theirs >= p) {
                refused.add("rank " + r + " named root " + theirs + ", not in [0, " + p + ")");
            } else if (theirs != all[1]) {
                refused.add("rank " + r + " named root " + theirs + " where rank 0 named " + all[1]);
            }
        }
        if (!refused.isEmpty()) {
            throw new IllegalArgumentException("rank " + rank() + ": " + what + " refused on every rank: "
                    + String.join("; ", refused.subList(0, Math.min(8, refused.size())))
                    + (refused.size() > 8 ? "; and " + (refused.size() - 8) + " more" : ""));
        }
        return lengths;
    }

    @Override
    public Work isend(Tensor tensor, int dst, int tag) {
        return pointToPoint.isend(tensor, dst, tag);
    }

    @Override
    public Work irecv(Tensor tensor, int src, int tag) {
        return pointToPoint.irecv(tensor, src, tag);
    }

    @Override
    public void send(Tensor tensor, int dst, int tag) {
        pointToPoint.send(tensor, dst, tag);
    }

    @Override
    public void recv(Tensor tensor, int src, int tag, CollectiveOptions options) {
        pointToPoint.recv(tensor, src, tag, options);
    }

    // ------------------------------------------------------------------ failure, abort, close

    @Override
    public void abort(String reason) {
        failures.abort(reason);
    }

    /**
     * Closes the sub-groups made from this communicator (they run over its transport), ends the call in flight, if
     * any, and waits for it to leave (up to 10 s); then closes the trace this communicator opened, the async thread
     * and the transport. Each part is closed whatever closing another throws, the transport last; then the first
     * failure is thrown, the others suppressed in it. Later calls fail. A close while another thread's close runs
     * returns when that one has ended (at most {@link #CLOSE_WAIT_SECONDS} s): a program that closed on one thread
     * and exited on another ended the first close before its goodbyes went out, and its peers took it for dead. A
     * close after that does nothing.
     */
    @Override
    public void close() {
        Throwable failure = closing(null, subGroups::closeAll); // they run over this communicator's transport
        if (!failures.close()) {
            awaitClosed();
            throwIf(failure);
            return;
        }
        try {
            failure = closing(failure, trace::close);
            failure = closing(failure, execution::shutdown);
            failure = closing(failure, pointToPoint::shutdown);
            if (ownsDiagnostics) {
                failure = closing(failure, diagnostics::close);
            } else { // a sub-group's: its parent's recorder and transport go on, without what they kept for it
                failure = closing(failure, () -> diagnostics.recorder().forget(communicatorId));
                failure = closing(failure, () -> transport.forget(communicatorId));
                failure = closing(failure, () -> io.jccl.step.ProgressExchange.forget(transport, communicatorId));
            }
            failure = closing(failure, transport::close);
        } finally {
            closed.countDown();
        }
        throwIf(failure);
    }

    /**
     * Runs {@code step}, a part of a close, and returns the close's first failure: {@code failure}, or what
     * {@code step} threw if there was none; a later one is added to the first as suppressed.
     */
    static Throwable closing(Throwable failure, Runnable step) {
        try {
            step.run();
            return failure;
        } catch (RuntimeException | Error e) {
            if (failure == null) {
                return e;
            }
            failure.addSuppressed(e);
            return failure;
        }
    }

    /** Throws {@code failure} (from {@link #closing}: unchecked) unless it is null. */
    static void throwIf(Throwable failure) {
        if (failure instanceof RuntimeException) {
            throw (RuntimeException) failure;
        }
        if (failure instanceof Error) {
            throw (Error) failure;
        }
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(DefaultCommunicator.class);
    /** How long a close waits for another thread's close to end. */
    static final long CLOSE_WAIT_SECONDS = 30;
    /** Counted down once the first close has ended. */
    private final java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);

    /** Waits for the close that another thread began to end (bounded; an interrupt ends the wait, its status kept). */
    private void awaitClosed() {
        try {
            if (!closed.await(CLOSE_WAIT_SECONDS, java.util.concurrent.TimeUnit.SECONDS)) {
                LOG.warn("rank {}: another thread's close() has not ended within {} s", rank(), CLOSE_WAIT_SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
