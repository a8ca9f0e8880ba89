package io.jccl.algorithm;

import io.jccl.step.CollectiveCall;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;

/**
 * The pipeline of the hierarchical algorithms: their data cut into chunks, and the phases of different chunks run
 * at once, so that the link between hosts carries one chunk while the ranks of a host work on others. Each chunk
 * goes through up to three phases: {@code within} before (on the call's thread), {@code across} (on a second thread
 * of the rank, {@code jccl-hierarchical-<rank>}, in a {@link CollectiveCall#detachedSubgroup} that it returns),
 * {@code after} within again (on the call's thread). The call's thread runs, on every rank in the same order,
 * before(0), before(1), after(0), before(2), after(1), ..., after(k-1), each after(c) once across(c) has ended;
 * the second thread runs across(0), across(1), ... each once before(c) has ended.
 *
 * <p>A failure on either thread ends the other's waits at once ({@link CollectiveCall#interruptWaits}: an abort on
 * the rank's own queues, as {@code close()} does to a call in flight; a send waiting for room in a local peer's ring
 * ends too), the call reports the first failure (not the interrupt it caused), and the second thread has ended
 * before {@link #run} returns or throws.
 */
final class HostPipeline {
    /** Data of this many bytes or more per rank goes in a pipeline of chunks of at least this size. */
    static final long CHUNK_BYTES = 4 << 20;
    /** The most chunks. */
    static final int MAX_CHUNKS = 16;

    private HostPipeline() {
    }

    /**
     * How many chunks for {@code bytes} of data of {@code elements} elements in {@code call}: 1 (no pipeline) below 2
     * chunks, or where the call's communicator does not overlap the phases within and across hosts
     * ({@link CollectiveCall#overlapsHosts}, from {@link Topology#overlapsHosts}).
     */
    static int chunks(CollectiveCall call, long bytes, int elements) {
        return call.overlapsHosts() ? chunks(bytes, elements) : 1;
    }

    /** How many chunks for {@code bytes} of data of {@code elements} elements where the phases overlap. */
    static int chunks(long bytes, int elements) {
        return (int) Math.max(1, Math.min(Math.min(MAX_CHUNKS, bytes / CHUNK_BYTES), elements));
    }

    /**
     * The predicted time of phases within hosts ({@code within} us in all) and across hosts ({@code across} us) on
     * {@code bytes} of data per rank: their sum where {@code topology} does not overlap them
     * ({@link Topology#overlapsHosts}), else the longer of the two and one chunk's share of the shorter (the
     * pipeline's fill and drain).
     */
    static double micros(double within, double across, long bytes, Topology topology, LinkCost messages) {
        int k = topology.overlapsHosts(messages) ? chunks(bytes, Integer.MAX_VALUE) : 1;
        return k == 1 ? within + across : Math.max(within, across) + Math.min(within, across) / k;
    }

    /**
     * Runs the phases of {@code chunks} chunks ({@code within} or {@code after} may be null: that phase does not
     * exist); the traffic of the detached subgroups {@code across} returns is added to {@code call}'s. One chunk
     * runs on the call's thread alone.
     */
    static void run(CollectiveCall call, int chunks, IntConsumer within, IntFunction<CollectiveCall> across,
                    IntConsumer after) {
        if (chunks == 1) { // one chunk: the phases one after the other on the call's thread
            if (within != null) {
                within.accept(0);
            }
            call.absorb(across.apply(0));
            if (after != null) {
                after.accept(0);
            }
            return;
        }
        Semaphore ready = new Semaphore(within == null ? chunks : 0);
        AtomicBoolean abandoned = new AtomicBoolean();
        AtomicReference<RuntimeException> first = new AtomicReference<>();
        CompletableFuture<?>[] crossed = new CompletableFuture<?>[chunks];
        CollectiveCall[] detached = new CollectiveCall[chunks];
        for (int c = 0; c < chunks; c++) {
            crossed[c] = new CompletableFuture<Void>();
        }
        Thread second = new Thread(() -> {
            int c = 0;
            try {
                for (; c < chunks; c++) {
                    ready.acquire();
                    if (abandoned.get()) {
                        throw new IllegalStateException("the call failed on its own thread");
                    }
                    detached[c] = across.apply(c);
                    crossed[c].complete(null);
                }
            } catch (Throwable t) {
                try {
                    if (!abandoned.get() && first.compareAndSet(null, asRuntime(t))) {
                        // the call's thread may wait on a local peer that waits for this chunk: end that wait now
                        call.interruptWaits("rank " + call.rank() + " failed in its " + call.signature().op().label()
                                + " (hierarchical, across hosts): " + t.getMessage());
                    }
                } finally { // whatever that throws (no memory for the message), the call's thread must not wait on
                    for (; c < chunks; c++) {
                        crossed[c].completeExceptionally(t);
                    }
                }
            }
        }, "jccl-hierarchical-" + call.rank());
        second.setDaemon(true);
        second.start();
        RuntimeException failure = null;
        Error error = null; // this thread's own, rethrown as it is
        try {
            for (int c = 0; c <= chunks; c++) {
                if (c < chunks && within != null) {
                    within.accept(c);
                    ready.release();
                }
                if (c > 0) {
                    await(crossed[c - 1]);
                    if (after != null) {
                        after.accept(c - 1);
                    }
                }
            }
        } catch (RuntimeException | Error e) { // an Error too: the other thread must not wait for chunks forever
            abandoned.set(true);
            ready.release(chunks);
            RuntimeException mine = asRuntime(e);
            if (first.compareAndSet(null, mine)) {
                call.interruptWaits("rank " + call.rank() + " failed in its " + call.signature().op().label()
                        + " (hierarchical, within its host): " + e.getMessage());
            }
            failure = first.get(); // the first failure, not the interrupt it caused on the other thread
            if (failure == mine && e instanceof Error) {
                error = (Error) e;
            }
        } finally {
            join(second);
        }
        if (error != null) {
            throw error;
        }
        if (failure != null) {
            throw failure;
        }
        for (CollectiveCall d : detached) {
            call.absorb(d);
        }
    }

    /** A failure as the call reports it: an Error (out of memory, an assertion) wrapped, naming it. */
    private static RuntimeException asRuntime(Throwable t) {
        return t instanceof RuntimeException ? (RuntimeException) t
                : new IllegalStateException("the hierarchical pipeline failed: " + t, t);
    }

    /** Waits for the inter-host phase of a chunk; its failure is the call's. */
    private static void await(CompletableFuture<?> f) {
        try {
            f.join();
        } catch (CompletionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw new IllegalStateException(cause);
        }
    }

    private static void join(Thread t) {
        boolean interrupted = false;
        while (true) {
            try {
                t.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
