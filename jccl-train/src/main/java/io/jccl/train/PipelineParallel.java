package io.jccl.train;

import io.jccl.Communicator;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

/**
 * Pipeline parallelism over an {@link Mlp}: the layers are cut into S stages; the ranks into S stage groups of k
 * ranks each (made with {@link Communicator#split}). Stage s's leader receives the activations from stage s-1's
 * leader (point to point), broadcasts them within its stage group, and each member runs the stage's layers on its
 * 1/k of the rows; the leader gathers the outputs and sends them on. Backward runs the other way with the
 * gradients at each stage's input; each stage group allreduces its layers' gradients, so the stage's replicas
 * stay identical. One micro-batch per step (no interleaving).
 */
public final class PipelineParallel implements AutoCloseable {
    private final Communicator world;
    private final Communicator stageGroup;
    private final Mlp model;
    private final int stages;
    private final int stage;
    private final int members;
    private final int from;
    private final int to;
    private final Optimizer optimizer;
    private final float[] params;
    private final float[] grads;

    /**
     * @throws IllegalArgumentException on every rank, when a rank's stage count does not divide the world size or
     *         exceeds the layer count, its {@code initialParams} is not {@link Mlp#totalParams()} long (or an argument
     *         is null), or the ranks' models or stage counts differ, or the initial parameters of a stage's layers
     *         differ between its replicas (exchanges before any step; the communicator stays usable)
     */
    public PipelineParallel(Communicator world, Mlp model, float[] initialParams, int stages, Optimizer optimizer) {
        String problem = model == null || initialParams == null || optimizer == null
                ? "a null model, initial parameters or optimizer"
                : stages < 1 || world.size() % stages != 0 || stages > model.layers()
                ? "need a stage count that divides the world size (" + world.size() + ") and is at most the layer "
                + "count (" + model.layers() + "), got " + stages
                : initialParams.length != model.totalParams()
                ? initialParams.length + " initial parameters, the model has " + model.totalParams() : null;
        java.util.List<String> facts = problem != null ? java.util.List.of() : Agreement.shape(model);
        if (problem == null) {
            facts.add("stages=" + stages);
        }
        Agreement.check(world, "PipelineParallel", problem, facts);
        this.world = world;
        this.model = model;
        this.stages = stages;
        this.members = world.size() / stages;
        this.stage = world.rank() / members;
        this.stageGroup = world.split(stage, world.rank());
        this.from = stage * model.layers() / stages;
        this.to = (stage + 1) * model.layers() / stages;
        this.optimizer = optimizer;
        this.params = initialParams.clone();
        this.grads = new float[initialParams.length];
        if (members > 1) { // a stage's replicas must start alike; other stages' layers are not theirs to compare
            Agreement.check(stageGroup, "PipelineParallel (stage " + stage + ")", null, java.util.List.of(
                    Agreement.hash("initial parameters of layers " + from + "-" + (to - 1), initialParams,
                            model.paramOffset(from), model.paramOffset(to - 1) + model.paramCount(to - 1))));
        }
    }

    /** Aborts the communicator with {@code what} ({@link Refusal}) and returns the exception this rank throws. */
    private IllegalArgumentException refuse(String what) {
        return new IllegalArgumentException(Refusal.abort(world, what));
    }

    private int leader(int s) {
        return s * members;
    }

    /**
     * One step on the global batch ({@code x}, {@code y} used only by the stage leaders that need them).
     *
     * @throws IllegalArgumentException when {@code rows} does not divide among the stage's members, or the first
     *         stage's leader's {@code x} or the last stage's leader's {@code y} holds fewer than {@code rows} rows
     *         (checked before any collective; the communicator is aborted, so that the other ranks' step, which
     *         may already wait for this rank, fails too)
     */
    public double step(float[] x, float[] y, int rows) {
        if (rows < 0 || rows % members != 0) {
            throw refuse("rows (" + rows + ") must divide among " + members + " stage members");
        }
        int part = rows / members;
        int m = stageGroup.rank();
        boolean leader = m == 0;
        int inWidth = model.in(from);
        int outWidth = model.out(to - 1);
        if (leader && stage == 0 && (x == null || x.length < (long) rows * inWidth)) {
            throw refuse("PipelineParallel.step of " + rows + " rows needs " + (long) rows * inWidth
                    + " inputs at the first stage's leader, got " + (x == null ? "none" : x.length));
        }
        if (leader && stage == stages - 1 && (y == null || y.length < (long) rows * outWidth)) {
            throw refuse("PipelineParallel.step of " + rows + " rows needs " + (long) rows * outWidth
                    + " targets at the last stage's leader, got " + (y == null ? "none" : y.length));
        }
        // forward: the stage input arrives at the leader and is broadcast within the stage
        float[] input = new float[rows * inWidth];
        if (leader) {
            if (stage == 0) {
                System.arraycopy(x, 0, input, 0, input.length);
            } else {
                world.recv(Tensor.of(input), leader(stage - 1), 1);
            }
        }
        stageGroup.broadcast(Tensor.of(input), 0);
        float[] mine = new float[part * inWidth];
        System.arraycopy(input, m * part * inWidth, mine, 0, mine.length);
        Mlp.Params p = model.flat(params);
        Mlp.Activations acts = model.forward(p, mine, part, from, to, Mlp.Hook.NONE);
        float[] gradOut = new float[part * outWidth];
        double loss = 0;
        if (stage < stages - 1) {
            float[] out = leader ? new float[rows * outWidth] : null;
            stageGroup.gather(Tensor.of(acts.output()), leader ? Tensor.of(out) : null, 0);
            if (leader) {
                world.send(Tensor.of(out), leader(stage + 1), 1);
                float[] g = new float[rows * outWidth];
                world.recv(Tensor.of(g), leader(stage + 1), 2);
                stageGroup.scatter(Tensor.of(g), Tensor.of(gradOut), 0);
            } else {
                stageGroup.scatter(null, Tensor.of(gradOut), 0);
            }
        } else {
            float[] target = new float[part * outWidth];
            float[] all = new float[rows * outWidth];
            if (leader) {
                System.arraycopy(y, 0, all, 0, all.length);
            }
            stageGroup.scatter(leader ? Tensor.of(all) : null, Tensor.of(target), 0);
            double[] l = {Mlp.mse(acts.output(), target, part, outWidth, rows, gradOut)};
            stageGroup.allReduce(Tensor.of(l), ReduceOp.SUM);
            loss = l[0];
        }
        // backward through this stage, then the gradient at the stage input goes back to the previous leader
        java.util.Arrays.fill(grads, 0f);
        float[] gin = model.backward(p, model.flat(grads), acts, gradOut, Mlp.Hook.NONE);
        if (stage > 0) {
            float[] all = leader ? new float[rows * inWidth] : null;
            stageGroup.gather(Tensor.of(gin), leader ? Tensor.of(all) : null, 0);
            if (leader) {
                world.send(Tensor.of(all), leader(stage - 1), 2);
            }
        }
        int lo = model.paramOffset(from);
        int n = model.paramOffset(to) - lo;
        stageGroup.allReduce(Tensor.of(grads, lo, n), ReduceOp.SUM);
        optimizer.step(params, lo, grads, lo, n);
        // everyone learns the loss from the last stage's leader
        double[] out = {loss};
        world.broadcast(Tensor.of(out), leader(stages - 1));
        return out[0];
    }

    /**
     * The whole model's current parameters on every rank (a collective call of the world): each stage's layers
     * broadcast from its leader, whose copy every member of the stage shares, bit for bit.
     */
    public float[] gatherParams() {
        float[] out = params.clone();
        for (int s = 0; s < stages; s++) {
            int lo = model.paramOffset(s * model.layers() / stages);
            int hi = model.paramOffset((s + 1) * model.layers() / stages);
            world.broadcast(Tensor.of(out, lo, hi - lo), leader(s));
        }
        return out;
    }

    /** The number of stages the layers are cut into. */
    public int stages() {
        return stages;
    }

    @Override
    public void close() {
        stageGroup.close();
    }
}
