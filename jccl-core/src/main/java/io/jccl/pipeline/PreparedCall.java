package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.algorithm.CollectiveAlgorithm;
import io.jccl.step.CollectiveCall;

import java.time.Duration;

/**
 * A validated collective call, waiting for its sequence number: its signature but for the sequence, the algorithm
 * that will run it, its timeout, whether a hierarchical algorithm overlaps its phases within and across hosts
 * ({@link CollectiveCall#overlapsHosts}), and the body that stages the tensors and runs the algorithm.
 */
record PreparedCall(OpType op, DataType dtype, long count, int root, ReduceOp reduceOp, Algorithm algorithm,
                    CollectiveAlgorithm implementation, Duration timeout, boolean overlapHosts, Body body) {

    /** What a call does around its algorithm: staging, the run, AVG's division, unstaging. */
    interface Body {
        void run(CollectiveCall call, CollectiveAlgorithm algorithm);
    }
}
