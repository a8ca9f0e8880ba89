package io.jccl.train;

/**
 * Updates a range of parameters from their gradients. State (momentum, Adam moments) is kept for exactly the
 * range it is given, so an optimizer over a 1/N shard holds 1/N of the state: ZeRO's saving.
 */
public interface Optimizer {

    /** One update of {@code n} parameters from {@code p[po..]} with gradients {@code g[go..]}. */
    void step(float[] p, int po, float[] g, int go, int n);

    /** Bytes of optimizer state held. */
    long stateBytes();

    /** SGD with momentum (PyTorch's form: v = mu v + g; p -= lr v). */
    static Optimizer sgd(float lr, float momentum) {
        return new Optimizer() {
            private float[] v;

            @Override
            public void step(float[] p, int po, float[] g, int go, int n) {
                if (v == null) {
                    v = new float[n];
                }
                for (int i = 0; i < n; i++) {
                    v[i] = momentum * v[i] + g[go + i];
                    p[po + i] -= lr * v[i];
                }
            }

            @Override
            public long stateBytes() {
                return v == null ? 0 : 4L * v.length;
            }
        };
    }

    /** Adam with bias correction. */
    static Optimizer adam(float lr, float beta1, float beta2, float eps) {
        return new Optimizer() {
            private float[] m;
            private float[] v;
            private int t;

            @Override
            public void step(float[] p, int po, float[] g, int go, int n) {
                if (m == null) {
                    m = new float[n];
                    v = new float[n];
                }
                t++;
                float c1 = (float) (1 - Math.pow(beta1, t));
                float c2 = (float) (1 - Math.pow(beta2, t));
                for (int i = 0; i < n; i++) {
                    float gi = g[go + i];
                    m[i] = beta1 * m[i] + (1 - beta1) * gi;
                    v[i] = beta2 * v[i] + (1 - beta2) * gi * gi;
                    p[po + i] -= lr * (m[i] / c1) / ((float) Math.sqrt(v[i] / c2) + eps);
                }
            }

            @Override
            public long stateBytes() {
                return m == null ? 0 : 8L * m.length;
            }
        };
    }
}
