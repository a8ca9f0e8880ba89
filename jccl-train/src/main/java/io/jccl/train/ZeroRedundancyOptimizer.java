package io.jccl.train;

import io.jccl.Communicator;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.util.function.Supplier;

/**
 * ZeRO stage 2: gradients and optimizer state sharded over the ranks. Each step reduce_scatters the gradients
 * (averaged) so that rank r holds the shard it owns, updates only that shard of the parameters with an optimizer
 * whose state covers only that shard (1/N of the whole), and allgathers the updated shards so every rank has the
 * full parameters for the next forward.
 *
 * <p>The gradients are averaged over the ranks (AVG), as in {@link DistributedDataParallel}: the global batch's
 * gradient when every rank's is that of its mean loss over the same number of rows. With uneven rows, pass each
 * rank's gradient of its part of the global batch's mean loss times the world size.
 */
public final class ZeroRedundancyOptimizer {
    private final Communicator comm;
    private final int total;
    private final int shard;
    private final float[] paddedGrads;
    private final float[] paddedParams;
    private final float[] shardGrads;
    private final float[] shardParams;
    private final Optimizer optimizer;

    /**
     * @throws IllegalArgumentException on every rank, when a rank's {@code parameters} is negative (or its
     *         {@code optimizer} null) or the ranks' differ (exchanges before any step; the communicator stays usable)
     */
    public ZeroRedundancyOptimizer(Communicator comm, int parameters, Supplier<Optimizer> optimizer) {
        Agreement.check(comm, "ZeroRedundancyOptimizer", optimizer == null ? "a null optimizer" : parameters < 0
                ? parameters + " parameters" : null, java.util.List.of("parameters=" + parameters));
        this.comm = comm;
        this.total = parameters;
        int p = comm.size();
        this.shard = (parameters + p - 1) / p;
        this.paddedGrads = new float[shard * p];
        this.paddedParams = new float[shard * p];
        this.shardGrads = new float[shard];
        this.shardParams = new float[shard];
        this.optimizer = optimizer.get();
    }

    /** Elements of the shard this rank owns. */
    public int shardSize() {
        return shard;
    }

    /**
     * Updates {@code params} in place from this rank's local {@code grads}.
     *
     * @throws IllegalArgumentException when {@code params} or {@code grads} does not hold exactly the parameter
     *         count given at construction (checked before any collective; the communicator is aborted, so that the
     *         peers, which may already wait in the step's reduce-scatter, fail at once with the reason)
     */
    public void step(float[] params, float[] grads) {
        if (params.length != total || grads.length != total) {
            throw new IllegalArgumentException(Refusal.abort(comm, "ZeroRedundancyOptimizer.step of "
                    + params.length + " parameters and " + grads.length + " gradients, constructed for " + total));
        }
        System.arraycopy(grads, 0, paddedGrads, 0, total);
        comm.reduceScatter(Tensor.of(paddedGrads), Tensor.of(shardGrads), ReduceOp.AVG);
        int r = comm.rank();
        int from = r * shard;
        int n = Math.max(0, Math.min(shard, total - from));
        if (n > 0) { // the last ranks own nothing where the shard size times the rank passes the end
            System.arraycopy(params, from, shardParams, 0, n);
        }
        optimizer.step(shardParams, 0, shardGrads, 0, n);
        comm.allGather(Tensor.of(shardParams), Tensor.of(paddedParams));
        System.arraycopy(paddedParams, 0, params, 0, total);
    }

    /** Bytes of optimizer state this rank holds: about 1/N of what one rank would hold alone. */
    public long optimizerStateBytes() {
        return optimizer.stateBytes();
    }
}
