package io.jccl.algorithm;

/**
 * The two parameters of the latency-bandwidth model of one path (messages over a transport, or its shared arena):
 * {@code alpha} microseconds per sequential step and {@code beta} microseconds per byte.
 */
public record LinkCost(double alphaMicros, double betaMicrosPerByte) {
    /** {@code alpha} and {@code beta} as {@code {alpha, beta}} (the form of {@code CostModel}). */
    public static LinkCost of(double[] alphaBeta) {
        return new LinkCost(alphaBeta[0], alphaBeta[1]);
    }

    /** Predicted microseconds of {@code steps} sequential steps moving {@code bytes} bytes: {@code s a + b beta}. */
    public double micros(double steps, double bytes) {
        return steps * alphaMicros + bytes * betaMicrosPerByte;
    }

    /** {@code ceil(log2 p)}, as the tree-shaped algorithms' models count rounds. */
    static double log2Ceil(int p) {
        return Math.ceil(Math.log(p) / Math.log(2));
    }

    static boolean isPow2(int p) {
        return Integer.bitCount(p) == 1;
    }
}
