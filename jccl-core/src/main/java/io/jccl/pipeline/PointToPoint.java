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
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * {@code send} and {@code recv}, and their asynchronous forms {@code isend} and {@code irecv}: outside the
 * collectives' sequence, on the communicator's point-to-point stream. Each direction of each pair of ranks numbers
 * its messages when the call is made, so a receive matches the sender's message of the same number and tag; a
 * failure fails the communicator as a collective's does.
 *
 * <p>Asynchronous sends to one peer run in call order, one after another, and so do asynchronous receives from
 * one peer, on threads of a pool made on first use; operations with different peers, or in different directions,
 * run side by side (a receive from rank 1 waited behind a pending receive from rank 2 before, and a program that
 * torch runs deadlocked until the timeout). A synchronous call made while asynchronous ones with its peer and
 * direction are pending queues behind them, so messages leave and are matched in program order per peer. A send
 * returns once its message is in the transport's buffers, so a batch of sends and receives completes in any order,
 * except that over shared memory a message larger than the ring towards its receiver ({@code JCCL_SHM_RING_BYTES})
 * waits until the receiver takes its first part, at most until the call's deadline (then it fails naming the
 * receiver), as MPI's standard send may; {@code isend} never blocks its caller.
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
    /** By peer: asynchronous sends to it, and receives from it, not yet ended. */
    private final AtomicIntegerArray pendingSends;
    private final AtomicIntegerArray pendingRecvs;
    /** By peer: the last asynchronous send to it and receive from it queued, which the next one runs after. */
    private final CompletableFuture<?>[] sendTail;
    private final CompletableFuture<?>[] recvTail;
    /** Guarded by {@code this}. */
    private ExecutorService pool;
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
        this.pendingSends = new AtomicIntegerArray(transport.size());
        this.pendingRecvs = new AtomicIntegerArray(transport.size());
        this.sendTail = new CompletableFuture<?>[transport.size()];
        this.recvTail = new CompletableFuture<?>[transport.size()];
    }

    void send(Tensor tensor, int dst, int tag) {
        checkSend(tensor, dst);
        failures.checkUsable(OpType.SEND);
        CompletableFuture<Void> done = new CompletableFuture<>();
        long seq = inline(true, dst, done);
        if (seq < 0) {
            isend(tensor, dst, tag).await(); // behind the sends to dst in flight or queued before it
            return;
        }
        try {
            doSend(tensor, dst, tag, seq);
        } finally {
            pendingSends.decrementAndGet(dst);
            done.complete(null);
        }
    }

    Work isend(Tensor tensor, int dst, int tag) {
        checkSend(tensor, dst);
        failures.checkUsable(OpType.SEND);
        return submit(true, dst, seq -> () -> doSend(tensor, dst, tag, seq));
    }

    /**
     * The checks of a send. A send refused to a rank that exists (a bad tensor) takes its number with that rank, as
     * the send would have, and tells it ({@link io.jccl.step.ProgressExchange#refused}): its receive of that number
     * fails at its next look, naming this rank and the reason, instead of waiting until its deadline.
     */
    private void checkSend(Tensor tensor, int dst) {
        try {
            checks.send(tensor, dst);
        } catch (IllegalArgumentException e) {
            long seq = refusedNumber(true, dst);
            if (seq >= 0) {
                io.jccl.step.ProgressExchange.refused(transport, diagnostics.recorder(), communicatorId,
                        new int[] {DefaultCommunicator.worldRanks(transport)[dst]}, transport.rank(), seq, OpType.SEND,
                        e.getMessage());
            }
            throw e;
        }
    }

    /**
     * The checks of a receive. A receive refused from a rank that exists takes its number too, so that where both
     * ends refused (the same bug on both) the pair stays in step; nobody is told (no sender waits for a receive),
     * but this rank's next receive, meeting the send of that number, says which receive it refused.
     */
    private void checkRecv(Tensor tensor, int src, CollectiveOptions options) {
        try {
            checks.recv(tensor, src, options);
        } catch (IllegalArgumentException | NullPointerException e) {
            long seq = refusedNumber(false, src);
            if (seq >= 0) {
                io.jccl.step.ProgressExchange.refusedReceive(transport, communicatorId, transport.rank(), src, seq,
                        e.getMessage() == null ? e.toString() : e.getMessage());
            }
            throw e;
        }
    }

    /**
     * The number a refused send to (receive from) {@code peer} takes, as the call would have, after the ones queued
     * before it; -1 where there is none to take (no such peer, or closed).
     */
    private long refusedNumber(boolean send, int peer) {
        if (peer < 0 || peer >= transport.size() || peer == transport.rank()) {
            return -1;
        }
        synchronized (this) { // the lock that numbers and queues the calls made before it
            return shutDown ? -1 : (send ? sent : received).getAndIncrement(peer);
        }
    }

    void recv(Tensor tensor, int src, int tag, CollectiveOptions options) {
        checkRecv(tensor, src, options);
        failures.checkUsable(OpType.RECV);
        CompletableFuture<Void> done = new CompletableFuture<>();
        long seq = inline(false, src, done);
        if (seq < 0) {
            submit(false, src, n -> () -> doRecv(tensor, src, tag, options, n)).await();
            return;
        }
        try {
            doRecv(tensor, src, tag, options, seq);
        } finally {
            pendingRecvs.decrementAndGet(src);
            done.complete(null);
        }
    }

    Work irecv(Tensor tensor, int src, int tag) {
        checkRecv(tensor, src, CollectiveOptions.DEFAULT);
        failures.checkUsable(OpType.RECV);
        return submit(false, src, seq -> () -> doRecv(tensor, src, tag, CollectiveOptions.DEFAULT, seq));
    }

    /**
     * A synchronous operation with {@code peer} runs on the caller's thread when nothing with that peer in its
     * direction is in flight or queued: then it takes its number, counts as in flight and becomes the tail that
     * later operations queue behind ({@code done}, completed by the caller after it), all under the lock that
     * queues the asynchronous ones, so that operations of several threads go out in the order of their numbers.
     * Returns its number, or -1: it must queue.
     */
    private synchronized long inline(boolean send, int peer, CompletableFuture<Void> done) {
        AtomicIntegerArray pending = send ? pendingSends : pendingRecvs;
        if (pending.get(peer) > 0) {
            return -1;
        }
        pending.incrementAndGet(peer);
        (send ? sendTail : recvTail)[peer] = done;
        return (send ? sent : received).getAndIncrement(peer);
    }

    /**
     * Queues the operation {@code op} makes of its number after the operations with {@code peer} in its direction;
     * its number is taken under the lock that orders the queue, so numbers and queue agree whatever the threads.
     */
    private Work submit(boolean send, int peer, java.util.function.LongFunction<Runnable> make) {
        CompletableFuture<Void> future = new CompletableFuture<>();
        AtomicIntegerArray pending = send ? pendingSends : pendingRecvs;
        synchronized (this) {
            if (shutDown) {
                future.completeExceptionally(closed(send));
                return new Work(future);
            }
            pending.incrementAndGet(peer);
            Runnable op = make.apply((send ? sent : received).getAndIncrement(peer));
            Runnable task = () -> {
                Throwable failure = null;
                try {
                    op.run();
                } catch (Throwable t) {
                    failure = t;
                }
                // no longer pending before anyone hears it is done: a recv made then need not queue behind it
                pending.decrementAndGet(peer);
                if (failure == null) {
                    future.complete(null);
                } else {
                    future.completeExceptionally(failure);
                }
            };
            if (pool == null) {
                String name = "jccl-rank-" + transport.rank() + "-p2p";
                pool = Executors.newCachedThreadPool(r -> {
                    Thread t = new Thread(r, name);
                    t.setDaemon(true);
                    return t;
                });
            }
            CompletableFuture<?>[] tails = send ? sendTail : recvTail;
            CompletableFuture<?> before = tails[peer] == null ? CompletableFuture.completedFuture(null) : tails[peer];
            CompletableFuture<Void> queued = before.handle((v, t) -> null).thenRunAsync(task, pool);
            queued.whenComplete((v, t) -> {
                if (t != null) { // not run: the pool was shut down (close) before its turn came
                    pending.decrementAndGet(peer);
                    future.completeExceptionally(closed(send));
                }
            });
            tails[peer] = queued;
        }
        return new Work(future);
    }

    private io.jccl.CommunicatorAbortedException closed(boolean send) {
        return new io.jccl.CommunicatorAbortedException(transport.rank(), send ? OpType.SEND : OpType.RECV,
                "the communicator is closed", null);
    }

    /** Lets queued operations end (they fail once the communicator is closed) and ends the threads. */
    synchronized void shutdown() {
        shutDown = true;
        if (pool != null) {
            pool.shutdown();
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
