package io.jccl.reference;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import io.jccl.algorithm.GlooChunking;
import io.jccl.buffer.Buf;
import io.jccl.reduce.Reductions;

import java.util.ArrayList;
import java.util.List;

/**
 * The exact expected output of every collective, computed on one thread from every rank's input.
 *
 * <p>Reductions follow gloo's ring order (see {@link GlooChunking}): chunk c is reduced as
 * x[c-1], then x[c-2], ..., then x[c], each step {@code op(own, accumulated)}. This is what the tests and
 * {@code jccl verify} compare against when torch is not available, and it is itself checked against gloo.
 */
public final class ReferenceModel {
    private ReferenceModel() {
    }

    /** The allreduce result every rank should hold. */
    public static Buf allReduce(List<Buf> inputs, ReduceOp op) {
        int p = inputs.size();
        Buf first = inputs.get(0);
        int n = first.count();
        DataType dt = first.dtype();
        Buf out = Buf.allocate(dt, n);
        int[] bounds = GlooChunking.bounds(n, dt.sizeBytes(), p);
        for (int c = 0; c < p; c++) {
            int lo = bounds[c];
            int len = bounds[c + 1] - lo;
            Buf acc = inputs.get(Math.floorMod(c - 1, p)).copyOf(lo, len);
            for (int k = 2; k <= p; k++) {
                Buf own = inputs.get(Math.floorMod(c - k, p)).copyOf(lo, len);
                Reductions.reduce(op, own, acc);
                acc = own;
            }
            acc.copyTo(out, lo);
        }
        if (op == ReduceOp.AVG) {
            Reductions.divide(out, p);
        }
        return out;
    }

    /**
     * The allreduce result in rank order, {@code ((x0 op x1) op x2) ...} element by element: what the
     * shared-memory algorithms compute.
     */
    public static Buf allReduceInRankOrder(List<Buf> inputs, ReduceOp op) {
        Buf acc = inputs.get(0).copyOf(0, inputs.get(0).count());
        for (int r = 1; r < inputs.size(); r++) {
            Reductions.reduce(op, acc, inputs.get(r));
        }
        if (op == ReduceOp.AVG) {
            Reductions.divide(acc, inputs.size());
        }
        return acc;
    }

    /** Block {@code rank} of the allreduce result. */
    public static Buf reduceScatter(List<Buf> inputs, ReduceOp op, int rank) {
        Buf all = allReduce(inputs, op);
        int block = all.count() / inputs.size();
        return all.copyOf(rank * block, block);
    }

    public static Buf allGather(List<Buf> inputs) {
        int c = inputs.get(0).count();
        Buf out = Buf.allocate(inputs.get(0).dtype(), c * inputs.size());
        for (int r = 0; r < inputs.size(); r++) {
            inputs.get(r).copyTo(out, r * c);
        }
        return out;
    }

    /** Block {@code block} of {@code buf} when it is cut into {@code parts} equal blocks. */
    public static Buf block(Buf buf, int parts, int block) {
        int c = buf.count() / parts;
        return buf.copyOf(block * c, c);
    }

    /** Rank {@code rank}'s all-to-all output. */
    public static Buf allToAll(List<Buf> inputs, int rank) {
        int p = inputs.size();
        List<Buf> blocks = new ArrayList<>(p);
        for (Buf in : inputs) {
            blocks.add(block(in, p, rank));
        }
        return allGather(blocks);
    }
}
