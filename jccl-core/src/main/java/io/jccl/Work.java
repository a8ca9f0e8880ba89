package io.jccl;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Handle of an asynchronous collective (torch's {@code Work}). Collectives of one communicator run in the order
 * they were called, whether synchronous or asynchronous.
 */
public final class Work {
    private final CompletableFuture<Void> future;
    /** {@link #toCompletableFuture}'s future, made on first use; guarded by {@code this}. */
    private CompletableFuture<Void> view;

    /**
     * Where {@link #toCompletableFuture}'s future completes, and so where the actions a caller chains to it run
     * ({@code thenRun}, {@code thenAccept}...): threads of their own, not the communicator's one thread for
     * asynchronous calls, on which an action that makes a jccl call (a {@code recv} in an {@code irecv}'s callback)
     * waited for itself forever.
     */
    private static final java.util.concurrent.Executor COMPLETIONS = java.util.concurrent.Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "jccl-work-completion");
        t.setDaemon(true);
        return t;
    });

    /**
     * The handle of a call whose completion is {@code future}. The communicator makes these; a caller has no need
     * to.
     *
     * @param future completes when the call has run, exceptionally when it failed
     */
    public Work(CompletableFuture<Void> future) {
        this.future = future;
    }

    /** Waits for completion; rethrows the collective's exception. */
    public void await() {
        try {
            future.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new JcclException("interrupted while waiting for a collective", e);
        } catch (ExecutionException | CompletionException e) {
            throw rethrow(e.getCause());
        }
    }

    /**
     * Waits at most {@code timeout}; returns whether the collective finished (rethrowing its exception).
     *
     * @param timeout how long to wait at most
     * @return true if the collective finished, false if it is still running
     */
    public boolean await(Duration timeout) {
        try {
            future.get(JcclSettings.bounded(timeout).toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new JcclException("interrupted while waiting for a collective", e);
        } catch (ExecutionException | CompletionException e) {
            throw rethrow(e.getCause());
        }
    }

    /**
     * Whether the collective has finished, successfully or not; never blocks.
     *
     * @return true once the call has completed or failed
     */
    public boolean isDone() {
        return future.isDone();
    }

    /**
     * A future that completes as this work does, to compose with other asynchronous work. It completes on a thread
     * of jccl's own for completions, not on the thread that runs the communicator's asynchronous calls, so an action
     * chained to it may make jccl calls, even wait for them (on that thread it waited for itself forever). So such
     * an action may run while the communicator's later calls run, and the actions of different works in any order:
     * an action must not read a tensor that a later asynchronous call writes, and it may see this future not yet
     * done just after {@link #await()} returned. Cancelling it does not cancel the call.
     *
     * @return the future of this work
     */
    public synchronized CompletableFuture<Void> toCompletableFuture() {
        if (view == null) {
            CompletableFuture<Void> v = new CompletableFuture<>();
            future.whenComplete((ok, failure) -> {
                Runnable done = () -> {
                    if (failure == null) {
                        v.complete(null);
                    } else {
                        v.completeExceptionally(failure instanceof CompletionException && failure.getCause() != null
                                ? failure.getCause() : failure);
                    }
                };
                try {
                    COMPLETIONS.execute(done);
                } catch (RuntimeException | Error e) { // no thread for it: complete here rather than never
                    done.run();
                }
            });
            view = v;
        }
        return view;
    }

    private static RuntimeException rethrow(Throwable cause) {
        if (cause instanceof RuntimeException) {
            return (RuntimeException) cause;
        }
        if (cause instanceof Error) {
            throw (Error) cause;
        }
        if (cause instanceof CancellationException) {
            return (CancellationException) cause;
        }
        return new JcclException("collective failed", cause);
    }
}
