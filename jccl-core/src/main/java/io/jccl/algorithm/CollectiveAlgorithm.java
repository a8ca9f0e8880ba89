package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import io.jccl.step.CollectiveCall;

/**
 * One algorithm for one collective, as the pipeline and AUTO see it: which operation and which
 * {@link Algorithm} constant it implements, whether it can run on a communicator, its per-call set-up, the run
 * itself, and its predicted time. Every implementation is listed in {@link AlgorithmRegistry}; the pipeline finds
 * algorithms only there.
 *
 * <p>Implementations are stateless (one instance serves every communicator and thread); what a call needs is in
 * its {@link CollectiveCall} and {@link Operands}.
 */
public interface CollectiveAlgorithm {

    /** The collective this algorithm performs. */
    OpType operation();

    /** The constant that names it in options, configuration, frame headers and traces. */
    Algorithm algorithm();

    /**
     * Whether AUTO takes this algorithm on a tie of predicted cost with one declared before it, for a call of
     * {@code bytes} on {@code topology} (where it is supported). The default, no: the first declared wins a tie.
     */
    default boolean winsTies(long bytes, Topology topology) {
        return false;
    }

    /**
     * Why this algorithm cannot run on {@code topology}, as the end of a message ("algorithm X needs ..."), or
     * null when it can. AUTO skips algorithms that cannot run; an explicit choice of one is refused.
     */
    default String unsupported(Topology topology) {
        return null;
    }

    /**
     * Whether a small call of this algorithm may {@link CollectiveCall#startLate start late}: its first exchange
     * comes before anything that takes time (no copy of a large buffer, no subgroup, no second thread), so its
     * clock reading, flight-recorder entry and count can follow its first arrival rather than precede it. False by
     * default: the call starts before it runs.
     */
    default boolean startsLate() {
        return false;
    }

    /** Per-call set-up, on the calling thread before {@link #run}; always followed by {@link #end}. */
    default void begin(CollectiveCall call) {
    }

    /** Undoes {@link #begin}, whether the run succeeded or not. */
    default void end(CollectiveCall call) {
    }

    /**
     * An allreduce of {@code tensor} that needs no staging, when this algorithm can do one (a tensor from
     * {@code Communicator.allocate} that peers read in place): runs it, dividing the result by {@code divideBy}
     * (AVG: the world size; else 1), and returns true. The default returns false and the pipeline stages the
     * tensor and calls {@link #run}.
     */
    default boolean runRegistered(CollectiveCall call, Tensor tensor, ReduceOp op, int divideBy) {
        return false;
    }

    /**
     * Runs the collective on staged buffers. AVG's division is the pipeline's, after this returns: an allreduce
     * or reduce_scatter with AVG sums here.
     */
    void run(CollectiveCall call, Operands operands);

    /**
     * The latency-bandwidth model of this algorithm, in the manner of NCCL's tuning: an algorithm that takes
     * {@code s} sequential steps and moves {@code b} bytes through the busiest rank is predicted to take
     * {@code s * alpha + b * beta} microseconds ({@link LinkCost#micros}), with {@code messages} for algorithms
     * that send frames and {@code arena} for those that go through the shared arena. AUTO runs the algorithm with
     * the lowest prediction; ties go to the first in {@link Algorithm}'s declaration order.
     *
     * @param bytes the call's signature count in bytes (the input of allreduce, broadcast, allgather, gather,
     *              reduce, all-to-all; the output of reduce_scatter and scatter)
     * @return predicted microseconds, or NaN if the model has no formula
     */
    double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena);
}
