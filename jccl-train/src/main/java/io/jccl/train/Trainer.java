package io.jccl.train;

import io.jccl.Communicator;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.util.ArrayList;
import java.util.List;

/**
 * Trains {@link TrainConfig}'s MLP for a number of steps in one mode, on one rank of {@code comm}, and records the
 * loss of the whole global batch and the wall time of every step. Every rank returns the same losses.
 */
public final class Trainer {
    private Trainer() {
    }

    /** Losses and timings of one run, from one rank. */
    public static final class Result {
        public final TrainConfig.Mode mode;
        public final int world;
        public final double[] losses;
        public final double[] stepMillis;
        public final long optimizerStateBytes;
        public final float[] finalParams;

        /** A result reported by another process (no parameters). */
        public static Result of(TrainConfig.Mode mode, int world, double[] losses, double[] stepMillis,
                                long optimizerStateBytes) {
            return new Result(mode, world, losses, stepMillis, optimizerStateBytes, null);
        }

        Result(TrainConfig.Mode mode, int world, double[] losses, double[] stepMillis, long optimizerStateBytes,
               float[] finalParams) {
            this.mode = mode;
            this.world = world;
            this.losses = losses;
            this.stepMillis = stepMillis;
            this.optimizerStateBytes = optimizerStateBytes;
            this.finalParams = finalParams;
        }
    }

    public static Result run(Communicator comm, TrainConfig cfg, TrainConfig.Mode mode) {
        Mlp model = new Mlp(cfg.sizes);
        float[] params = model.initParams(cfg.seed);
        int in = cfg.sizes[0];
        int out = cfg.sizes[cfg.sizes.length - 1];
        Dataset data = new Dataset(cfg.seed + 1, cfg.batch * cfg.batches, in, out);
        int world = comm == null ? 1 : comm.size();
        int rank = comm == null ? 0 : comm.rank();
        if (mode == TrainConfig.Mode.SINGLE && world != 1) {
            throw new IllegalArgumentException("SINGLE trains on one rank, got a world of " + world);
        }
        if (mode != TrainConfig.Mode.PIPELINE && cfg.batch % world != 0) {
            throw new IllegalArgumentException("the batch (" + cfg.batch + ") must divide among " + world + " ranks");
        }
        int local = mode == TrainConfig.Mode.PIPELINE ? cfg.batch : cfg.batch / world;
        double[] losses = new double[cfg.steps];
        double[] millis = new double[cfg.steps];
        float[] grads = new float[params.length];
        Optimizer opt = cfg.newOptimizer();
        DistributedDataParallel ddp = mode == TrainConfig.Mode.DDP
                ? new DistributedDataParallel(comm, ddpParameters(model, grads), cfg.bucketBytes, cfg.overlap) : null;
        ZeroRedundancyOptimizer zero = mode == TrainConfig.Mode.ZERO
                ? new ZeroRedundancyOptimizer(comm, params.length, cfg::newOptimizer) : null;
        FullyShardedDataParallel fsdp = mode == TrainConfig.Mode.FSDP
                ? new FullyShardedDataParallel(comm, model, params, cfg::newOptimizer) : null;
        // a failure of the pipeline's close is added to the step's, not thrown in its place
        try (PipelineParallel pipe = mode == TrainConfig.Mode.PIPELINE
                ? new PipelineParallel(comm, model, params, cfg.stages, opt) : null) {
            for (int t = 0; t < cfg.steps; t++) {
                long t0 = System.nanoTime();
                int first = (t % cfg.batches) * cfg.batch + (mode == TrainConfig.Mode.PIPELINE ? 0 : rank * local);
                float[] x = data.inputs(first, local);
                float[] y = data.targets(first, local);
                double loss;
                switch (mode) {
                    case SINGLE:
                        loss = localStep(model, params, grads, x, y, local, Mlp.Hook.NONE);
                        opt.step(params, 0, grads, 0, params.length);
                        break;
                    case DDP:
                        loss = localStep(model, params, grads, x, y, local, new Mlp.Hook() {
                            @Override
                            public void after(int layer) {
                                ddp.markReady(2 * layer + 1); // the bias, then the weights: reverse order
                                ddp.markReady(2 * layer);
                            }
                        });
                        ddp.finish();
                        opt.step(params, 0, grads, 0, params.length);
                        loss = average(comm, loss);
                        break;
                    case ZERO:
                        loss = localStep(model, params, grads, x, y, local, Mlp.Hook.NONE);
                        zero.step(params, grads);
                        loss = average(comm, loss);
                        break;
                    case FSDP:
                        loss = average(comm, fsdp.step(x, y, local));
                        break;
                    case PIPELINE:
                        loss = pipe.step(x, y, local);
                        break;
                    default:
                        throw new AssertionError(mode);
                }
                losses[t] = loss;
                millis[t] = (System.nanoTime() - t0) / 1e6;
            }
            long state = zero != null ? zero.optimizerStateBytes() : fsdp != null ? fsdp.optimizerStateBytes()
                    : opt.stateBytes();
            float[] finalParams = fsdp != null ? fsdp.gatherParams() : pipe != null ? pipe.gatherParams() : params;
            return new Result(mode, world, losses, millis, state, finalParams);
        }
    }

    /** The weight and bias of every layer, in registration (forward) order. */
    static List<DistributedDataParallel.Parameter> ddpParameters(Mlp model, float[] grads) {
        List<DistributedDataParallel.Parameter> ps = new ArrayList<>();
        for (int l = 0; l < model.layers(); l++) {
            int w = model.out(l) * model.in(l);
            ps.add(new DistributedDataParallel.Parameter("layer" + l + ".weight", grads, model.paramOffset(l), w));
            ps.add(new DistributedDataParallel.Parameter("layer" + l + ".bias", grads, model.paramOffset(l) + w,
                    model.out(l)));
        }
        return ps;
    }

    private static double localStep(Mlp model, float[] params, float[] grads, float[] x, float[] y, int rows,
                                    Mlp.Hook hook) {
        java.util.Arrays.fill(grads, 0f);
        Mlp.Params p = model.flat(params);
        Mlp.Activations acts = model.forward(p, x, rows, 0, model.layers(), Mlp.Hook.NONE);
        float[] gradOut = new float[acts.output().length];
        double loss = Mlp.mse(acts.output(), y, rows, model.out(model.layers() - 1), rows, gradOut);
        model.backward(p, model.flat(grads), acts, gradOut, hook);
        return loss;
    }

    private static double average(Communicator comm, double loss) {
        double[] l = {loss};
        comm.allReduce(Tensor.of(l), ReduceOp.AVG);
        return l[0];
    }
}
