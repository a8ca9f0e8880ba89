package io.jccl.train;

import io.jccl.Communicator;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.util.List;
import java.util.function.Supplier;

/**
 * FSDP over an {@link Mlp}, one layer per unit: each rank keeps only its 1/N shard of every layer's parameters.
 * Before a layer's forward the full parameters are allgathered and released after it; backward gathers them again,
 * computes the layer's gradients, reduce_scatters them (averaged) into the rank's gradient shard and releases both;
 * the optimizer then updates each shard with state for that shard only.
 *
 * <p>{@link #step(float[], float[], int)} averages the ranks' gradients, each the gradient of its mean loss: that
 * is the global batch's gradient only when every rank has the same number of rows (PyTorch FSDP's semantics too).
 * With uneven rows, {@link #step(float[], float[], int, int)} takes the global batch's row count and sums the
 * ranks' gradients of their parts of the global batch's mean loss instead.
 */
public final class FullyShardedDataParallel {
    private final Communicator comm;
    private final Mlp model;
    private final int[] shard;
    private final float[][] shardParams;
    private final float[][] shardGrads;
    private final Optimizer[] optimizers;
    private final float[][] full;
    private final float[][] fullGrads;
    private long peakFullFloats;
    private long heldFullFloats;

    /**
     * @param comm the ranks sharing the model
     * @param model the model
     * @param initialParams the whole model's initial parameters, {@link Mlp#totalParams()} of them, the same on every
     *        rank; each rank keeps its shard
     * @param optimizer makes one optimizer per layer, for that layer's shard
     * @throws IllegalArgumentException on every rank, when a rank's {@code initialParams} is not
     *         {@link Mlp#totalParams()} long (or an argument is null), or the ranks' models or initial parameters
     *         differ (exchanges before any step; the communicator stays usable)
     */
    public FullyShardedDataParallel(Communicator comm, Mlp model, float[] initialParams,
                                    Supplier<Optimizer> optimizer) {
        String problem = model == null || initialParams == null || optimizer == null ? "a null model, initial "
                + "parameters or optimizer" : initialParams.length != model.totalParams() ? initialParams.length
                + " initial parameters, the model has " + model.totalParams() : null;
        List<String> facts = problem != null ? List.of() : Agreement.shape(model);
        if (problem == null) {
            facts.add(Agreement.hash("initial parameters", initialParams, 0, initialParams.length));
        }
        Agreement.check(comm, "FullyShardedDataParallel", problem, facts);
        this.comm = comm;
        this.model = model;
        int layers = model.layers();
        int p = comm.size();
        int r = comm.rank();
        shard = new int[layers];
        shardParams = new float[layers][];
        shardGrads = new float[layers][];
        optimizers = new Optimizer[layers];
        full = new float[layers][];
        fullGrads = new float[layers][];
        for (int l = 0; l < layers; l++) {
            int n = model.paramCount(l);
            shard[l] = (n + p - 1) / p;
            shardParams[l] = new float[shard[l]];
            shardGrads[l] = new float[shard[l]];
            int from = r * shard[l];
            int take = Math.max(0, Math.min(shard[l], n - from));
            if (take > 0) { // the last ranks own nothing of a layer smaller than the shard size times the rank
                System.arraycopy(initialParams, model.paramOffset(l) + from, shardParams[l], 0, take);
            }
            optimizers[l] = optimizer.get();
        }
    }

    private void gather(int l) {
        float[] padded = new float[shard[l] * comm.size()];
        comm.allGather(Tensor.of(shardParams[l]), Tensor.of(padded));
        full[l] = padded;
        hold(padded.length);
    }

    private void release(int l) {
        heldFullFloats -= full[l].length;
        full[l] = null;
    }

    private void hold(long floats) {
        heldFullFloats += floats;
        peakFullFloats = Math.max(peakFullFloats, heldFullFloats);
    }

    /**
     * One training step on this rank's {@code rows} rows; returns this rank's loss (mean over its rows). The
     * gradients are averaged over the ranks: the global batch's gradient only when every rank has {@code rows}
     * rows (else use {@link #step(float[], float[], int, int)}).
     *
     * @throws IllegalArgumentException when {@code rows} is not positive (a mean over no rows, NaN, would be averaged
     *         into every rank's gradients: a rank with no rows takes {@link #step(float[], float[], int, int)}), or
     *         {@code x} or {@code y} holds fewer than {@code rows} rows (checked before any collective; the
     *         communicator is aborted, so that the peers' step fails too)
     */
    public double step(float[] x, float[] y, int rows) {
        if (rows <= 0) {
            throw refuse("FullyShardedDataParallel.step of " + rows + " rows: the gradients are averaged over the "
                    + "ranks' means, and a mean over no rows is NaN; a rank without rows takes step(x, y, rows, "
                    + "globalRows)");
        }
        return step(x, y, rows, rows, ReduceOp.AVG);
    }

    /** Aborts the communicator with {@code what} ({@link Refusal}) and returns the exception this rank throws. */
    private IllegalArgumentException refuse(String what) {
        return new IllegalArgumentException(Refusal.abort(comm, what));
    }

    /**
     * One training step on this rank's {@code rows} rows of a global batch of {@code globalRows} rows, the sum of
     * every rank's {@code rows} (ranks may have different counts, or none): each rank's gradients are those of its
     * part of the global batch's mean loss, and are summed over the ranks, which gives the global batch's gradient.
     * Returns this rank's part of the global batch's loss (its rows' squared errors over {@code globalRows}); the
     * sum of every rank's is the global batch's mean loss.
     *
     * @throws IllegalArgumentException when {@code globalRows} is less than {@code rows} or not positive, or
     *         {@code x} or {@code y} holds fewer than {@code rows} rows (checked before any collective; the
     *         communicator is aborted, so that the peers' step fails too); or, on every rank alike, when the ranks
     *         gave different {@code globalRows} or their {@code rows} do not add up to it (the gradients would be
     *         silently wrong: each rank's part is scaled by its {@code globalRows}); the communicator stays usable
     */
    public double step(float[] x, float[] y, int rows, int globalRows) {
        if (globalRows <= 0 || globalRows < rows) {
            throw refuse("FullyShardedDataParallel.step of " + rows + " rows of a global batch of " + globalRows);
        }
        checkGlobalBatch(rows, globalRows);
        return step(x, y, rows, globalRows, ReduceOp.SUM);
    }

    /**
     * That every rank gave the same {@code globalRows} and that the ranks' {@code rows} add up to it: an allGatherV
     * of two ints per rank (its exchange is tagged as jccl's own, so it never pairs with a user's allgather of the
     * same shape), so that every rank reaches the same verdict and names the same ranks.
     */
    private void checkGlobalBatch(int rows, int globalRows) {
        int p = comm.size();
        int[] all = new int[2 * p];
        byte[][] sent = comm.allGatherV(java.nio.ByteBuffer.allocate(8).putInt(rows).putInt(globalRows).array());
        for (int r = 0; r < p; r++) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(sent[r]);
            if (sent[r].length != 8) {
                throw new IllegalArgumentException("rank " + comm.rank() + ": FullyShardedDataParallel.step: rank " + r
                        + " sent " + sent[r].length + " bytes for its rows and globalRows, not 8");
            }
            all[2 * r] = b.getInt();
            all[2 * r + 1] = b.getInt();
        }
        long sum = 0;
        for (int r = 0; r < p; r++) {
            sum += all[2 * r];
            if (all[2 * r + 1] != all[1]) {
                throw new IllegalArgumentException("rank " + comm.rank() + ": FullyShardedDataParallel.step: rank " + r
                        + " gave globalRows=" + all[2 * r + 1] + ", rank 0 gave " + all[1] + "; every rank must give "
                        + "the global batch's row count, the sum of every rank's rows");
            }
        }
        if (sum != all[1]) {
            StringBuilder each = new StringBuilder();
            for (int r = 0; r < p; r++) {
                each.append(r == 0 ? "" : ", ").append("rank ").append(r).append(": ").append(all[2 * r]);
            }
            throw new IllegalArgumentException("rank " + comm.rank() + ": FullyShardedDataParallel.step: the ranks' "
                    + "rows add up to " + sum + " (" + each + "), not to the globalRows every rank gave, " + all[1]);
        }
    }

    private double step(float[] x, float[] y, int rows, int lossRows, ReduceOp gradientOp) {
        int in = model.in(0);
        int out = model.out(model.layers() - 1);
        if (rows < 0 || x.length < (long) rows * in || y.length < (long) rows * out) {
            throw refuse("FullyShardedDataParallel.step of " + rows + " rows needs " + (long) rows * in
                    + " inputs and " + (long) rows * out + " targets, got " + x.length + " and " + y.length);
        }
        Mlp.Params params = new Mlp.Params() {
            @Override
            public float[] array(int layer) {
                return full[layer];
            }

            @Override
            public int offset(int layer) {
                return 0;
            }
        };
        Mlp.Params grads = new Mlp.Params() {
            @Override
            public float[] array(int layer) {
                return fullGrads[layer];
            }

            @Override
            public int offset(int layer) {
                return 0;
            }
        };
        Mlp.Activations acts = model.forward(params, x, rows, 0, model.layers(), new Mlp.Hook() {
            @Override
            public void before(int layer) {
                gather(layer);
            }

            @Override
            public void after(int layer) {
                release(layer);
            }
        });
        float[] gradOut = new float[acts.output().length];
        double loss = Mlp.mse(acts.output(), y, rows, model.out(model.layers() - 1), lossRows, gradOut);
        model.backward(params, grads, acts, gradOut, new Mlp.Hook() {
            @Override
            public void before(int layer) {
                gather(layer);
                fullGrads[layer] = new float[full[layer].length];
                hold(fullGrads[layer].length);
            }

            @Override
            public void after(int layer) {
                comm.reduceScatter(Tensor.of(fullGrads[layer]), Tensor.of(shardGrads[layer]), gradientOp);
                heldFullFloats -= fullGrads[layer].length;
                fullGrads[layer] = null;
                release(layer);
            }
        });
        int r = comm.rank();
        for (int l = 0; l < model.layers(); l++) {
            int n = Math.max(0, Math.min(shard[l], model.paramCount(l) - r * shard[l]));
            optimizers[l].step(shardParams[l], 0, shardGrads[l], 0, n);
        }
        return loss;
    }

    /** The full parameters, gathered (a collective call). */
    public float[] gatherParams() {
        float[] out = new float[model.totalParams()];
        for (int l = 0; l < model.layers(); l++) {
            gather(l);
            System.arraycopy(full[l], 0, out, model.paramOffset(l), model.paramCount(l));
            release(l);
        }
        return out;
    }

    /** The most full-parameter and full-gradient floats held at once: about two layers, not the whole model. */
    public long peakFullFloats() {
        return peakFullFloats;
    }

    public long optimizerStateBytes() {
        long s = 0;
        for (Optimizer o : optimizers) {
            s += o.stateBytes();
        }
        return s;
    }
}
