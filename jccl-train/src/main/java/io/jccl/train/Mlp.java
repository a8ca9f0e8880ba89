package io.jccl.train;

import java.util.SplittableRandom;

/**
 * A small multilayer perceptron in plain Java: fully connected layers with tanh between them and a linear output,
 * trained on mean squared error. Parameters live wherever a {@link Params} says (one flat array for data
 * parallelism, one gathered array per layer for FSDP), so the same forward and backward serve every mode.
 *
 * <p>Layer l maps {@code sizes[l]} inputs to {@code sizes[l+1]} outputs; its parameters are the weight matrix
 * (out x in, row-major) followed by the bias (out), at {@link #paramOffset(int)} in the flat layout.
 */
public final class Mlp {
    private final int[] sizes;
    private final int[] offsets;

    public Mlp(int... sizes) {
        if (sizes.length < 2) {
            throw new IllegalArgumentException("an MLP needs at least an input and an output size");
        }
        this.sizes = sizes.clone();
        this.offsets = new int[sizes.length];
        for (int l = 0; l < layers(); l++) {
            offsets[l + 1] = offsets[l] + paramCount(l);
        }
    }

    /** Where layer l's parameters (or gradients) are: an array and the offset of the layer's first element. */
    public interface Params {
        float[] array(int layer);

        int offset(int layer);
    }

    /** Called around each layer of a forward or backward pass: FSDP gathers and frees, DDP marks buckets ready. */
    public interface Hook {
        Hook NONE = new Hook() {
        };

        default void before(int layer) {
        }

        default void after(int layer) {
        }
    }

    /** A flat layout: every layer in one array at {@link #paramOffset(int)}. */
    public Params flat(float[] array) {
        return new Params() {
            @Override
            public float[] array(int layer) {
                return array;
            }

            @Override
            public int offset(int layer) {
                return offsets[layer];
            }
        };
    }

    public int layers() {
        return sizes.length - 1;
    }

    public int in(int layer) {
        return sizes[layer];
    }

    public int out(int layer) {
        return sizes[layer + 1];
    }

    public int paramCount(int layer) {
        return out(layer) * in(layer) + out(layer);
    }

    public int paramOffset(int layer) {
        return offsets[layer];
    }

    public int totalParams() {
        return offsets[layers()];
    }

    /** Deterministic initial parameters: uniform in +-sqrt(6 / (in + out)) for weights, zero biases. */
    public float[] initParams(long seed) {
        float[] p = new float[totalParams()];
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int l = 0; l < layers(); l++) {
            double limit = Math.sqrt(6.0 / (in(l) + out(l)));
            int o = offsets[l];
            for (int i = 0; i < out(l) * in(l); i++) {
                p[o + i] = (float) ((rnd.nextDouble() * 2 - 1) * limit);
            }
        }
        return p;
    }

    /** The activations of a forward pass over layers [from, to): a[0] is the input, a[k+1] the output of layer from+k. */
    public static final class Activations {
        final float[][] a;
        final int rows;
        final int from;

        Activations(float[][] a, int rows, int from) {
            this.a = a;
            this.rows = rows;
            this.from = from;
        }

        /** The output of the last layer run. */
        public float[] output() {
            return a[a.length - 1];
        }
    }

    /** Runs layers [from, to) on {@code rows} rows of {@code x}. */
    public Activations forward(Params p, float[] x, int rows, int from, int to, Hook hook) {
        float[][] a = new float[to - from + 1][];
        a[0] = x;
        for (int l = from; l < to; l++) {
            hook.before(l);
            float[] w = p.array(l);
            int wo = p.offset(l);
            int bo = wo + out(l) * in(l);
            int in = in(l);
            int out = out(l);
            float[] xin = a[l - from];
            float[] y = new float[rows * out];
            boolean hidden = l < layers() - 1;
            for (int r = 0; r < rows; r++) {
                for (int o = 0; o < out; o++) {
                    float s = w[bo + o];
                    int row = wo + o * in;
                    for (int i = 0; i < in; i++) {
                        s += w[row + i] * xin[r * in + i];
                    }
                    y[r * out + o] = hidden ? (float) Math.tanh(s) : s;
                }
            }
            a[l - from + 1] = y;
            hook.after(l);
        }
        return new Activations(a, rows, from);
    }

    /**
     * Back-propagates {@code gradOut} (the loss gradient at the output of layer {@code to - 1}) through layers
     * [from, to), adding each layer's parameter gradients into {@code g}; returns the gradient at the input.
     */
    public float[] backward(Params p, Params g, Activations acts, float[] gradOut, Hook hook) {
        int from = acts.from;
        int to = from + acts.a.length - 1;
        int rows = acts.rows;
        float[] grad = gradOut;
        for (int l = to - 1; l >= from; l--) {
            hook.before(l);
            int in = in(l);
            int out = out(l);
            float[] w = p.array(l);
            int wo = p.offset(l);
            float[] gw = g.array(l);
            int go = g.offset(l);
            int gbo = go + out * in;
            float[] y = acts.a[l - from + 1];
            float[] x = acts.a[l - from];
            boolean hidden = l < layers() - 1;
            float[] dz = new float[rows * out];
            for (int k = 0; k < dz.length; k++) {
                dz[k] = hidden ? grad[k] * (1 - y[k] * y[k]) : grad[k];
            }
            float[] gin = new float[rows * in];
            for (int r = 0; r < rows; r++) {
                for (int o = 0; o < out; o++) {
                    float d = dz[r * out + o];
                    gw[gbo + o] += d;
                    int row = o * in;
                    for (int i = 0; i < in; i++) {
                        gw[go + row + i] += d * x[r * in + i];
                        gin[r * in + i] += d * w[wo + row + i];
                    }
                }
            }
            grad = gin;
            hook.after(l);
        }
        return grad;
    }

    /**
     * Mean squared error of {@code rows} predictions, as a part of a batch of {@code totalRows}: returns the sum of
     * squared errors divided by {@code totalRows * outputs}, and writes its gradient into {@code grad}.
     */
    public static double mse(float[] pred, float[] target, int rows, int outputs, int totalRows, float[] grad) {
        double loss = 0;
        float scale = 2f / ((float) totalRows * outputs);
        for (int k = 0; k < rows * outputs; k++) {
            float e = pred[k] - target[k];
            loss += (double) e * e;
            grad[k] = scale * e;
        }
        return loss / ((double) totalRows * outputs);
    }
}
