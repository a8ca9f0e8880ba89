package io.jccl.step;

/**
 * What a call's pipeline does when the call starts (see {@link CollectiveCall#startLate}): its flight-recorder entry,
 * its count, its trace's start.
 */
@FunctionalInterface
public interface CallStart {
    /** {@code call} started at {@code nowNanos} ({@code System.nanoTime()}), on its own thread. */
    void started(CollectiveCall call, long nowNanos);
}
