package io.jccl.train;

import java.util.SplittableRandom;

/**
 * A regression data set generated deterministically from a seed, so every rank and process builds the same one:
 * x uniform in [-1, 1]^in, y_j = sin(x . a_j) + 0.5 cos(x . b_j) + 0.01 noise.
 */
public final class Dataset {
    private final int inputs;
    private final int outputs;
    private final int rows;
    private final float[] x;
    private final float[] y;

    public Dataset(long seed, int rows, int inputs, int outputs) {
        this.inputs = inputs;
        this.outputs = outputs;
        this.rows = rows;
        SplittableRandom rnd = new SplittableRandom(seed);
        double[][] a = new double[outputs][inputs];
        double[][] b = new double[outputs][inputs];
        for (int j = 0; j < outputs; j++) {
            for (int i = 0; i < inputs; i++) {
                a[j][i] = rnd.nextDouble() * 2 - 1;
                b[j][i] = rnd.nextDouble() * 2 - 1;
            }
        }
        x = new float[rows * inputs];
        y = new float[rows * outputs];
        for (int r = 0; r < rows; r++) {
            for (int i = 0; i < inputs; i++) {
                x[r * inputs + i] = (float) (rnd.nextDouble() * 2 - 1);
            }
            for (int j = 0; j < outputs; j++) {
                double s = 0;
                double c = 0;
                for (int i = 0; i < inputs; i++) {
                    s += x[r * inputs + i] * a[j][i];
                    c += x[r * inputs + i] * b[j][i];
                }
                y[r * outputs + j] = (float) (Math.sin(s) + 0.5 * Math.cos(c) + 0.01 * (rnd.nextDouble() - 0.5));
            }
        }
    }

    public int rows() {
        return rows;
    }

    /** Inputs of rows [from, from + n) (wrapping around the end). */
    public float[] inputs(int from, int n) {
        return slice(x, inputs, from, n);
    }

    public float[] targets(int from, int n) {
        return slice(y, outputs, from, n);
    }

    private float[] slice(float[] data, int width, int from, int n) {
        float[] out = new float[n * width];
        for (int r = 0; r < n; r++) {
            System.arraycopy(data, ((from + r) % rows) * width, out, r * width, width);
        }
        return out;
    }
}
