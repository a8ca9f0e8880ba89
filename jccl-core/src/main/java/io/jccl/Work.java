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
            future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
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
     * The underlying future, to compose with other asynchronous work.
     *
     * @return the future this work wraps
     */
    public CompletableFuture<Void> toCompletableFuture() {
        return future;
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
