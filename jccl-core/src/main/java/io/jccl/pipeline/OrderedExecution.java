package io.jccl.pipeline;

import io.jccl.OpType;
import io.jccl.Work;
import io.jccl.instrument.Counter;
import io.jccl.instrument.TrafficCounters;
import io.jccl.step.CollectiveCall;
import io.jccl.step.Signature;
import io.jccl.transport.ArrayPool;
import io.jccl.transport.Streams;
import io.jccl.transport.Transport;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Collective calls in sequence order: each call takes the next sequence number on the caller's thread (so the
 * order is the program's, whether a call is synchronous or asynchronous), then waits for its turn and runs
 * (asynchronous calls on the communicator's single async thread). A run counts the call, holds the algorithm's
 * set-up around it, traces it, and on failure has {@link FailurePropagation} fail the communicator.
 */
final class OrderedExecution {
    private final Transport transport;
    private final int communicatorId;
    private final TrafficCounters counters;
    private final FailurePropagation failures;
    private final CallTrace trace;
    private final Diagnostics diagnostics;
    private final io.jccl.diag.FlightRecorder.Progress progress;
    private final ArrayPool scratch = new ArrayPool();
    private final io.jccl.diag.DebugLog log;
    /** Takes back each prepared call once it has run. */
    private final CallFactory calls;
    /**
     * The call object of the last call that ended well and may serve again ({@link CollectiveCall#restart}), or
     * null. Only the call whose turn it is touches it (the turn orders them), so no lock or atomic guards it.
     */
    private CollectiveCall spareCall;
    /**
     * The call whose turn it is, for {@link #started}: its prepared call, sequence number, flight-recorder entry
     * ({@link #UNSCHEDULED}: not made yet) and trace start. Only that call touches them (the turn orders them).
     */
    private PreparedCall current;
    private long currentSeq;
    private long currentRecord;
    private long currentStartMicros;
    /** Made once: every call of this communicator starts late ({@link CollectiveCall#startLate}) through it. */
    private final io.jccl.step.CallStart onStart = this::started;
    /** A synchronous call's flight-recorder entry before its start makes it. */
    private static final long UNSCHEDULED = Long.MIN_VALUE;

    /** What a caller waits on when its turn has not come: only then is a lock taken. */
    private final Object turn = new Object();
    private final java.util.concurrent.atomic.AtomicLong nextSequence = new java.util.concurrent.atomic.AtomicLong();
    /** The sequence number whose turn it is; written only by the call whose turn ends ({@link #passTurn}). */
    private volatile long serving;
    /** Callers waiting on {@link #turn}; changed under it, read by {@link #passTurn} without it. */
    private volatile int waiters;
    /** Guarded by {@code this}. */
    private ExecutorService async;

    OrderedExecution(Transport transport, int communicatorId, TrafficCounters counters, FailurePropagation failures,
                     CallTrace trace, Diagnostics diagnostics, int[] members, CallFactory calls) {
        this.calls = calls;
        this.transport = transport;
        this.communicatorId = communicatorId;
        this.counters = counters;
        this.failures = failures;
        this.trace = trace;
        this.diagnostics = diagnostics;
        this.progress = diagnostics.recorder().progress(communicatorId, members);
        this.log = diagnostics.log();
    }

    void runSync(PreparedCall p) {
        long seq;
        try {
            seq = takeSequence(p.op());
        } catch (RuntimeException e) {
            calls.release(p);
            throw e;
        }
        long record;
        try {
            // a call whose turn it is makes its entry when it starts (started), else now, so that the recorder shows
            // a call waiting for its turn (behind another thread's)
            record = serving == seq ? UNSCHEDULED : schedule(p, seq, System.nanoTime());
        } catch (RuntimeException | Error e) {
            skip(seq, p);
            throw e;
        }
        execute(p, seq, record);
    }

    /**
     * A call that took sequence number {@code seq} and cannot run: it still takes its turn and passes it, or every
     * later call of the communicator would wait for it forever.
     */
    private void skip(long seq, PreparedCall p) {
        try {
            awaitTurn(seq);
            passTurn();
        } finally {
            calls.release(p);
        }
    }

    /**
     * A call object for call {@code seq} of {@code p}, which {@link CollectiveCall#startLate starts late}: the spare
     * one restarted, or a new one.
     */
    private CollectiveCall callFor(PreparedCall p, long seq) {
        CollectiveCall call = spareCall;
        spareCall = null;
        if (call != null) {
            call.restart(p.op(), seq, p.dtype(), p.count(), p.root(), p.reduceOp(), p.algorithm(), p.timeout(),
                    onStart);
            return call;
        }
        Signature sig = new Signature(p.op(), seq, p.dtype(), p.count(), p.root(), p.reduceOp(), p.algorithm());
        call = new CollectiveCall(transport, Streams.collective(communicatorId), sig, p.timeout(), counters, scratch,
                0);
        call.countInTurn();
        call.startLate(onStart);
        return call;
    }

    /**
     * The start of the call whose turn it is ({@link CollectiveCall#startLate}): when it first waits, sends or posts
     * a receive, right after it publishes an arrival in a shared arena (while the arrival crosses the cores), or
     * after its algorithm ran. Makes its flight-recorder entry if need be and marks it started, counts the call and
     * reads the trace's wall clock.
     */
    private void started(CollectiveCall call, long nowNanos) {
        currentStartMicros = trace.startMicros();
        long record = record();
        call.observe(diagnostics.recorder(), record);
        diagnostics.recorder().started(record, progress, currentSeq, nowNanos);
        counters.addInTurn(current.op(), Counter.CALLS, 1);
    }

    /**
     * Starts a call that failed before it started (so that its trace and entry have a start), keeping the failure
     * first: what starting throws (no memory for the trace's clock) is added to it.
     */
    private static void startFailed(CollectiveCall call, Throwable failure) {
        try {
            call.start();
        } catch (RuntimeException | Error e) {
            failure.addSuppressed(e);
        }
    }

    /** Calls of at most this many bytes start late where their algorithm may ({@link #run}). */
    private static final long LATE_START_BYTES = 64 << 10;

    /** The flight-recorder entry of the call whose turn it is, made now if it was not. */
    private long record() {
        if (currentRecord == UNSCHEDULED) {
            currentRecord = schedule(current, currentSeq, 0);
        }
        return currentRecord;
    }

    /**
     * The call's entry in the flight recorder, made when the call takes its sequence number ({@code nowNanos}: the
     * clock then), or for a synchronous call whose turn it is when it starts ({@code nowNanos} 0: its start's).
     */
    private long schedule(PreparedCall p, long seq, long nowNanos) {
        return diagnostics.recorder().scheduled(communicatorId, false, p.op(), seq, p.dtype(), p.count(), p.root(),
                p.algorithm(), p.timeout().toMillis(), nowNanos);
    }

    Work runAsync(PreparedCall p) {
        calls.detach(p);
        // made before the sequence number is taken: from there on nothing may throw outside the try that skips it,
        // or the number is lost and every later call of the communicator waits for its turn forever
        CompletableFuture<Void> future = new CompletableFuture<>();
        Work work = new Work(future);
        long seq = takeSequence(p.op());
        try {
            long record = schedule(p, seq, System.nanoTime());
            asyncExecutor().execute(() -> {
                try {
                    execute(p, seq, record);
                    future.complete(null);
                } catch (Throwable t) {
                    future.completeExceptionally(t);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) { // closed meanwhile
            skip(seq, p);
            failures.checkUsable(p.op());
            throw e;
        } catch (RuntimeException | Error e) { // no thread for it (out of memory): the number must not be lost
            skip(seq, p);
            throw e;
        }
        return work;
    }

    /**
     * A collective call of {@code op} that this rank refused ({@link ArgumentChecks}; the caller throws it next). It
     * takes the call's sequence number and passes its turn, so that where every rank refused the call they stay in
     * step and the communicator stays usable; then it tells every peer ({@link io.jccl.step.ProgressExchange#refused}),
     * so that a peer that runs the call fails at its next look, naming this rank and {@code reason}, and the
     * communicator fails everywhere, instead of waiting for this rank until its deadline. Nothing happens on one
     * rank, or on a communicator that can take no call. (The flight recorder keeps no entry: a call that every rank
     * refused is no call, and {@code jccl analyze} would take it for the first one not every rank finished.)
     */
    void refuse(OpType op, String reason) {
        if (transport.size() == 1) {
            return;
        }
        long seq;
        try {
            seq = takeSequence(op);
        } catch (RuntimeException closedOrFailed) {
            return; // no call can run: the caller's refusal is all there is to say
        }
        // the turn passes once the peers are told, so that no later call of this rank reaches them first; where it
        // is not this call's turn yet, the pass is queued before they are told, so that nothing queues before it
        java.util.concurrent.CountDownLatch told = new java.util.concurrent.CountDownLatch(1);
        boolean now = serving == seq;
        if (!now) {
            passTurnOf(seq, told);
        }
        try {
            io.jccl.step.ProgressExchange.refused(transport, diagnostics.recorder(), communicatorId,
                    progress.members(), transport.rank(), seq, op, reason);
        } finally {
            told.countDown();
            if (now) {
                passTurn();
            }
        }
    }

    /**
     * Passes the turn of call {@code seq}, which will not run and whose turn has not come, on the async thread once
     * it comes and {@code told} is counted down (a caller does not wait for calls queued before it to refuse one);
     * on this thread, then, if there is no async thread to be had.
     */
    private void passTurnOf(long seq, java.util.concurrent.CountDownLatch told) {
        Runnable pass = () -> {
            awaitTurn(seq);
            boolean interrupted = false;
            while (true) {
                try {
                    told.await();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            passTurn();
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        };
        try {
            asyncExecutor().execute(pass);
        } catch (RuntimeException | Error noThread) { // closed meanwhile, or no memory for a thread
            told.countDown(); // this thread waits for the turn here, before it tells anyone
            pass.run();
        }
    }

    private long takeSequence(OpType op) {
        failures.checkUsable(op);
        return nextSequence.getAndIncrement();
    }

    /** {@link #execute}, then hands {@code p} back to the factory, whether the call ended well or not. */
    private void execute(PreparedCall p, long seq, long record) {
        try {
            run(p, seq, record);
        } finally {
            calls.release(p);
        }
    }

    private void run(PreparedCall p, long seq, long record) {
        awaitTurn(seq);
        current = p;
        currentSeq = seq;
        currentRecord = record;
        currentStartMicros = 0;
        io.jccl.diag.FlightRecorder recorder = diagnostics.recorder();
        // counted in flight before it looks whether the communicator closed: a close() on another thread then either
        // sees the call (and interrupts it, and waits for it) or the call sees the close (and refuses to start);
        // counted after, a call could start unseen on a transport the close went on to close
        failures.enterCall();
        try {
            try {
                failures.checkStart(p.op());
            } catch (RuntimeException e) {
                recordFailed(e, e.getMessage());
                throw e;
            }
            // from here on every failure fails the communicator and tells the peers, which run this call too
            CollectiveCall call = null;
            io.jccl.diag.CallEvent event = null;
            try {
                // no clock reading, entry or count yet: the call makes them when it starts (started)
                call = callFor(p, seq);
                call.overlapHosts(p.overlapHosts());
                // a small call of an algorithm whose first arrival comes first (a shared-memory round) starts there;
                // others now: a large call copies its input in first, a hierarchical one makes subgroups and threads
                if (!p.implementation().startsLate() || p.count() * p.dtype().sizeBytes() > LATE_START_BYTES) {
                    call.start();
                }
                if (log.isTrace(io.jccl.diag.DebugLog.Subsys.COLL)) {
                    log.trace(io.jccl.diag.DebugLog.Subsys.COLL, "rank {}: {} #{} of communicator {}: {} x {}{}{}, "
                            + "algorithm {}", transport.rank(), p.op().label(), seq, communicatorId,
                            p.dtype().torchName(), p.count(), p.reduceOp() == null ? "" : ", " + p.reduceOp(),
                            p.root() < 0 ? "" : ", root " + p.root(), p.algorithm());
                }
                if (io.jccl.diag.CallEvent.isOn()) {
                    event = new io.jccl.diag.CallEvent();
                    event.begin();
                }
                p.implementation().begin(call);
                try {
                    p.body().run(p, call, p.implementation());
                } finally {
                    call.cancelOutstanding();
                    p.implementation().end(call);
                }
                call.start(); // a call that never had to wait, send or arrive
                trace.record(call, currentStartMicros, call.startNanos(), null); // best effort: it throws nothing
                recorder.completed(currentRecord, call.lastClock());
                commit(event, p, seq, call, false);
                if (call.reusable()) {
                    spareCall = call;
                }
            } catch (RuntimeException e) {
                RuntimeException end = failures.ended(p.op(), seq, e);
                failed(call, event, p, seq, end, end);
                throw end;
            } catch (Error e) { // out of memory, a failed assertion: the communicator fails and the peers hear it
                RuntimeException end = new io.jccl.JcclException(transport.rank(), p.op(), seq, "rank "
                        + transport.rank() + " failed in its " + p.op().label() + " #" + seq + ": " + e, e);
                failed(call, event, p, seq, end, e);
                throw e;
            }
        } finally {
            failures.exitCall();
            passTurn();
        }
    }

    /**
     * The end of call {@code seq}, which failed with {@code end} ({@code thrown}: what its caller gets, {@code end}
     * or the Error behind it): starts it if it had not started (so that its trace and entry have a start), marks its
     * flight-recorder entry failed (before the dump on failure reads it), fails the communicator and tells every
     * peer, then traces the call and ends its JFR event. None of this changes the outcome: the communicator fails
     * whatever the rest throws, and what it throws is added to {@code thrown}. {@code call} is null if the call
     * failed before it had a call object.
     */
    private void failed(CollectiveCall call, io.jccl.diag.CallEvent event, PreparedCall p, long seq,
                        RuntimeException end, Throwable thrown) {
        if (call != null) {
            startFailed(call, thrown);
        }
        recordFailed(thrown, end.getMessage());
        try {
            failures.fail(end);
        } catch (RuntimeException | Error e) { // it records the failure before anything that could throw
            thrown.addSuppressed(e);
        }
        if (call == null) {
            return;
        }
        try {
            trace.record(call, currentStartMicros, call.startNanos(), end);
            commit(event, p, seq, call, true);
        } catch (RuntimeException | Error e) {
            thrown.addSuppressed(e);
        }
    }

    /**
     * Marks the flight-recorder entry of the call whose turn it is failed with {@code message}; what that throws is
     * added to {@code failure}, which stays the call's outcome.
     */
    private void recordFailed(Throwable failure, String message) {
        try {
            diagnostics.recorder().failed(record(), message);
        } catch (RuntimeException | Error e) {
            failure.addSuppressed(e);
        }
    }

    /** Ends the JFR event of a call, if a recording asked for it. */
    private void commit(io.jccl.diag.CallEvent event, PreparedCall p, long seq, CollectiveCall call,
                        boolean failed) {
        if (event == null) {
            return;
        }
        event.end();
        event.operation = p.op().label();
        event.algorithm = p.algorithm() == null ? "" : p.algorithm().name();
        event.bytes = p.count() * p.dtype().sizeBytes();
        event.communicator = communicatorId;
        event.rank = transport.rank();
        event.sequence = seq;
        event.peer = call.lastWaitedFor();
        event.failed = failed;
        event.commit();
    }

    /**
     * Waits until it is call {@code seq}'s turn: a volatile read when it is already (the common case: one caller),
     * else a wait on {@link #turn}. No wake-up is lost: a waiter counts itself before it reads {@link #serving}, and
     * {@link #passTurn} writes {@code serving} before it reads the count (volatile accesses are sequentially
     * consistent).
     */
    private void awaitTurn(long seq) {
        if (serving == seq) {
            return;
        }
        boolean interrupted = false;
        synchronized (turn) {
            waiters++;
            try {
                while (serving != seq) {
                    try {
                        turn.wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
            } finally {
                waiters--;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Ends this call's turn: the next sequence number's call may run; wakes waiters only if there are any. */
    private void passTurn() {
        serving = serving + 1; // only the call whose turn it was writes it
        if (waiters > 0) {
            synchronized (turn) {
                turn.notifyAll();
            }
        }
    }

    /** Whether {@link #shutdown} ran; guarded by {@code this}. */
    private boolean shutDown;

    private synchronized ExecutorService asyncExecutor() {
        if (shutDown) { // a call that raced close: no new thread, which nothing would end
            throw new java.util.concurrent.RejectedExecutionException("the communicator is closed");
        }
        if (async == null) {
            async = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "jccl-rank-" + transport.rank() + "-async");
                t.setDaemon(true);
                return t;
            });
        }
        return async;
    }

    /** Lets queued asynchronous calls finish (they fail: the communicator is closed) and ends the async thread. */
    synchronized void shutdown() {
        shutDown = true;
        if (async != null) {
            async.shutdown();
        }
    }
}
