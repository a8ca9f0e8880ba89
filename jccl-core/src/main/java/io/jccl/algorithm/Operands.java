package io.jccl.algorithm;

import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;

/**
 * The staged buffers and arguments of one call, as {@link CollectiveAlgorithm#run} receives them. In-place
 * collectives (allreduce, broadcast, reduce) have {@code input == output}; {@code input} is null on the non-root
 * ranks of scatter and {@code output} on those of gather; {@code reduceOp} is null and {@code root} -1 where they do
 * not apply.
 */
public record Operands(Buf input, Buf output, ReduceOp reduceOp, int root) {
    /** No buffers: barrier. */
    public static final Operands NONE = new Operands(null, null, null, -1);

    /** {@code data} is both input and output. */
    public static Operands inPlace(Buf data, ReduceOp reduceOp, int root) {
        return new Operands(data, data, reduceOp, root);
    }

    /** The buffer of an in-place collective. */
    public Buf data() {
        return output;
    }
}
