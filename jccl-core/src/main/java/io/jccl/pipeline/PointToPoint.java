package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.CommunicatorConfig;
import io.jccl.OpType;
import io.jccl.Tensor;
import io.jccl.Work;
import io.jccl.buffer.Buf;
import io.jccl.instrument.Counter;
import io.jccl.instrument.TrafficCounters;
import io.jccl.step.CollectiveCall;
import io.jccl.step.Signature;
import io.jccl.transport.Streams;
import io.jccl.transport.Transport;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code send} and {@code recv}, and their asynchronous forms {@code isend} and {@code irecv}: outside the
 * collectives' sequence, on the communicator's point-to-point stream. Each direction of each pair of ranks numbers
 * its messages when the call is made, so a receive matches the sender's message of the same number and tag; a
 * failure fails the communicator as a collective's does.
 *
 * <p>Asynchronous sends run in call order on one sender thread, asynchronous receives in call order on one
 * receiver thread (each made on first use); a synchronous call made while asynchronous ones of its direction are
 * pending queues behind them, so messages leave and are matched in program order. A send returns once its message
 * is in the transport's buffers, so a batch of sends and receives completes in any order, except that over shared
 * memory a message larger than the ring towards its receiver ({@code JCCL_SHM_RING_BYTES}) waits until the receiver
 * takes its first part, at most until the call's deadline (then it fails naming the receiver), as MPI's standard
 * send may; {@code isend} never blocks its caller.
 */
final class PointToPoint {
    private final Transport transport;
    private final Staging staging;
    private final int communicatorId;
    private final CommunicatorConfig config;
    private final TrafficCounters counters;
    private final ArgumentChecks checks;
    private final FailurePropagation failures;
    private final AtomicLongArray sent;
    private final AtomicLongArray received;
    private final AtomicInteger pendingSends = new AtomicInteger();
    private final AtomicInteger pendingRecvs = new AtomicInteger();
    /** Guarded by {@code this}. */
    private ExecutorService sender;
    /** Guarded by {@code this}. */
    private ExecutorService receiver;
    /** Guarded by {@code this}. */
    private boolean shutDown;

    private final Diagnostics diagnostics;

    PointToPoint(Transport transport, int communicatorId, CommunicatorConfig config, TrafficCounters counters,
                 ArgumentChecks checks, FailurePropagation failures, Diagnostics diagnostics) {
        this.diagnostics = diagnostics;
        this.transport = transport;
        this.staging = new Staging(transport.arena() == null);
        this.communicatorId = communicatorId;
        this.config = config;
        this.counters = counters;
        this.checks = checks;
        this.failures = failures;
        this.sent = new AtomicLongArray(transport.size());
        this.received = new AtomicLongArray(transport.size());
    }

    void send(Tensor tensor, int dst, int tag) {
        checks.send(tensor, dst);
        failures.checkUsable(OpType.SEND);
        if (pendingSends.get() > 0) {
            isend(tensor, dst, tag).await(); // behind the asynchronous sends queued before it
            return;
        }
        doSend(tensor, dst, tag, sent.getAndIncrement(dst));
    }

    Work isend(Tensor tensor, int dst, int tag) {
        checks.send(tensor, dst);
        failures.checkUsable(OpType.SEND);
        long seq = sent.getAndIncrement(dst);
        return submit(true, pendingSends, () -> doSend(tensor, dst, tag, seq));
    }

    void recv(Tensor tensor, int src, int tag, CollectiveOptions options) {
        checks.recv(tensor, src, options);
        failures.checkUsable(OpType.RECV);
        if (pendingRecvs.get() > 0) {
            long seq = received.getAndIncrement(src);
            submit(false, pendingRecvs, () -> doRecv(tensor, src, tag, options, seq)).await();
            return;
        }
        doRecv(tensor, src, tag, options, received.getAndIncrement(src));
    }

    Work irecv(Tensor tensor, int src, int tag) {
        checks.recv(tensor, src, CollectiveOptions.DEFAULT);
        failures.checkUsable(OpType.RECV);
        long seq = received.getAndIncrement(src);
        return submit(false, pendingRecvs, () -> doRecv(tensor, src, tag, CollectiveOptions.DEFAULT, seq));
    }

    private Work submit(boolean send, AtomicInteger pending, Runnable op) {
        CompletableFuture<Void> future = new CompletableFuture<>();
        pending.incrementAndGet();
        try {
            executor(send).execute(() -> {
                Throwable failure = null;
                try {
                    op.run();
                } catch (Throwable t) {
                    failure = t;
                }
                // no longer pending before anyone hears it is done: a recv made then need not queue behind it
                pending.decrementAndGet();
                if (failure == null) {
                    future.complete(null);
                } else {
                    future.completeExceptionally(failure);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            pending.decrementAndGet();
            future.completeExceptionally(new io.jccl.CommunicatorAbortedException(transport.rank(),
                    send ? OpType.SEND : OpType.RECV, "the communicator is closed", null));
        }
        return new Work(future);
    }

    private synchronized ExecutorService executor(boolean send) {
        if (shutDown) {
            throw new java.util.concurrent.RejectedExecutionException("closed");
        }
        ExecutorService e = send ? sender : receiver;
        if (e == null) {
            String name = "jccl-rank-" + transport.rank() + (send ? "-isend" : "-irecv");
            e = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, name);
                t.setDaemon(true);
                return t;
            });
            if (send) {
                sender = e;
            } else {
                receiver = e;
            }
        }
        return e;
    }

    /** Lets queued operations end (they fail once the communicator is closed) and ends the threads. */
    synchronized void shutdown() {
        shutDown = true;
        if (sender != null) {
            sender.shutdown();
        }
        if (receiver != null) {
            receiver.shutdown();
        }
    }

    /** Ends the JFR event of a send or receive with {@code peer}, if a recording asked for it. */
    private void commit(io.jccl.diag.CallEvent event, Signature sig, Tensor tensor, int peer, boolean failed) {
        if (event == null) {
            return;
        }
        event.end();
        event.operation = sig.op().label();
        event.algorithm = Algorithm.DIRECT.name();
        event.bytes = tensor.byteSize();
        event.communicator = communicatorId;
        event.rank = transport.rank();
        event.sequence = sig.sequence();
        event.peer = peer;
        event.failed = failed;
        event.commit();
    }

    /**
     * Counted in flight before it looks whether the communicator closed (as a collective is, in
     * {@code OrderedExecution}): a close() on another thread then sees it, or it sees the close.
     */
    private void doSend(Tensor tensor, int dst, int tag, long seq) {
        failures.enterCall();
        try {
            sendCounted(tensor, dst, tag, seq);
        } finally {
            failures.exitCall();
        }
    }

    private void doRecv(Tensor tensor, int src, int tag, CollectiveOptions options, long seq) {
        failures.enterCall();
        try {
            recvCounted(tensor, src, tag, options, seq);
        } finally {
            failures.exitCall();
        }
    }

    private void sendCounted(Tensor tensor, int dst, int tag, long seq) {
        failures.checkUsable(OpType.SEND);
        Signature sig = new Signature(OpType.SEND, seq, tensor.dtype(), tensor.count(), tag, null, Algorithm.DIRECT);
        CollectiveCall call = new CollectiveCall(transport, Streams.pointToPoint(communicatorId), sig,
                config.timeout(), counters);
        counters.add(OpType.SEND, Counter.CALLS, 1);
        io.jccl.diag.FlightRecorder recorder = diagnostics.recorder();
        long record = recorder.scheduled(communicatorId, true, OpType.SEND, seq, tensor.dtype(), tensor.count(), dst,
                Algorithm.DIRECT, config.timeout().toMillis(), 0);
        recorder.started(record, null, seq, call.lastClock());
        call.observe(recorder, record);
        io.jccl.diag.CallEvent event = null;
        if (io.jccl.diag.CallEvent.isOn()) {
            event = new io.jccl.diag.CallEvent();
            event.begin();
        }
        try {
            call.send(dst, staging.stage(tensor));
            recorder.completed(record, call.lastClock());
            commit(event, sig, tensor, dst, false);
        } catch (RuntimeException e) {
            RuntimeException end = failures.ended(OpType.SEND, sig.sequence(), e);
            recorder.failed(record, end.getMessage());
            commit(event, sig, tensor, dst, true);
            throw failures.fail(end);
        }
    }

    private void recvCounted(Tensor tensor, int src, int tag, CollectiveOptions options, long seq) {
        failures.checkUsable(OpType.RECV);
        Signature sig = new Signature(OpType.RECV, seq, tensor.dtype(), tensor.count(), tag, null, Algorithm.DIRECT);
        Duration timeout = options.timeout() != null ? options.timeout() : config.timeout();
        CollectiveCall call = new CollectiveCall(transport, Streams.pointToPoint(communicatorId), sig, timeout,
                counters);
        counters.add(OpType.RECV, Counter.CALLS, 1);
        io.jccl.diag.FlightRecorder recorder = diagnostics.recorder();
        long record = recorder.scheduled(communicatorId, true, OpType.RECV, seq, tensor.dtype(), tensor.count(), src,
                Algorithm.DIRECT, timeout.toMillis(), 0);
        recorder.started(record, null, seq, call.lastClock());
        call.observe(recorder, record);
        io.jccl.diag.CallEvent event = null;
        if (io.jccl.diag.CallEvent.isOn()) {
            event = new io.jccl.diag.CallEvent();
            event.begin();
        }
        try {
            Buf b = staging.stage(tensor);
            call.recvInto(src, b);
            staging.unstage(tensor, b);
            recorder.completed(record, call.lastClock());
            commit(event, sig, tensor, src, false);
        } catch (RuntimeException e) {
            RuntimeException end = failures.ended(OpType.RECV, sig.sequence(), e);
            recorder.failed(record, end.getMessage());
            commit(event, sig, tensor, src, true);
            throw failures.fail(end);
        }
    }
}
