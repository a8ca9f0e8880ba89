package io.jccl.train;

import java.util.Locale;

/** What the demo trains and how. Mutable, with defaults that train in about a second on two cores. */
public final class TrainConfig {
    /** The ways to train the same model. */
    public enum Mode {
        /** One process, the whole global batch: the reference every other mode must match. */
        SINGLE,
        /** Data parallel: bucketed gradient allreduce overlapped with backward. */
        DDP,
        /** ZeRO stage 2: reduce_scatter gradients, update the owned shard, allgather parameters. */
        ZERO,
        /** Fully sharded: parameters sharded per layer, gathered around each layer's use. */
        FSDP,
        /** Pipeline: stage groups from split, activations between stage leaders, broadcast within a stage. */
        PIPELINE;

        public static Mode parse(String s) {
            return valueOf(s.trim().toUpperCase(Locale.ROOT));
        }
    }

    public int[] sizes = {16, 64, 64, 4};
    public int batch = 96;
    public int batches = 8;
    public int steps = 40;
    public long seed = 7;
    public String optimizer = "sgd";
    public float lr = 0.05f;
    public float momentum = 0.9f;
    public long bucketBytes = DistributedDataParallel.DEFAULT_BUCKET_BYTES;
    public boolean overlap = true;
    /** Pipeline stages; the world size must be a multiple. */
    public int stages = 2;

    public Optimizer newOptimizer() {
        switch (optimizer) {
            case "sgd": return Optimizer.sgd(lr, momentum);
            case "adam": return Optimizer.adam(lr, 0.9f, 0.999f, 1e-8f);
            default: throw new IllegalArgumentException("optimizer must be sgd or adam, got " + optimizer);
        }
    }
}
