package io.jccl.verify;

import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.reference.InputGenerator;

/**
 * One row of the verification table: a primitive, dtype, op (for reductions), world size, element count and root.
 *
 * <p>The count is the full buffer in nccl-tests' sense: the tensor of all_reduce, broadcast and reduce; the full
 * output of all_gather and gather; the full input of reduce_scatter, scatter and all_to_all. Where a primitive
 * needs a multiple of the world size the requested count is rounded up to one, and the row says so.
 */
public final class VerifyCase {
    private final int id;
    private final OpType primitive;
    private final DataType dtype;
    private final ReduceOp op;
    private final int world;
    private final int requestedCount;
    private final int count;
    private final int root;
    private final long seed;

    public VerifyCase(int id, OpType primitive, DataType dtype, ReduceOp op, int world, int requestedCount, int root,
                      long seed) {
        this.id = id;
        this.primitive = primitive;
        this.dtype = dtype;
        Primitive p = Primitive.of(primitive);
        this.op = p.reduces() ? op : null;
        this.world = world;
        this.requestedCount = requestedCount;
        this.count = p.blocked() ? ceilToMultiple(requestedCount, world) : requestedCount;
        this.root = p.rooted() ? root : 0;
        this.seed = seed;
    }

    private static int ceilToMultiple(int n, int m) {
        return (int) (((long) n + m - 1) / m * m);
    }

    public int id() {
        return id;
    }

    /** The collective of the row (one of {@link Primitive#ALL}). */
    public OpType primitive() {
        return primitive;
    }

    public DataType dtype() {
        return dtype;
    }

    /** The reduce op, or null for primitives that do not reduce. */
    public ReduceOp op() {
        return op;
    }

    public int world() {
        return world;
    }

    public int count() {
        return count;
    }

    public int requestedCount() {
        return requestedCount;
    }

    public boolean countAdjusted() {
        return count != requestedCount;
    }

    public int root() {
        return root;
    }

    /** The seed the inputs derive from (with the id and the rank). */
    public long seed() {
        return seed;
    }

    /** Elements of each rank's input: a block for all_gather and gather, the full count otherwise. */
    public int inputCount(int rank) {
        switch (primitive) {
            case ALL_GATHER:
            case GATHER:
                return count / world;
            case SCATTER:
                return rank == root ? count : 0;
            default:
                return count;
        }
    }

    /** Rank {@code rank}'s input, the same in every process that asks. */
    public Buf input(int rank) {
        return InputGenerator.generate(dtype, op, inputCount(rank), seed + id * 7919L, rank);
    }

    /** Whether rank {@code rank} has an output to compare (rooted reductions and gathers only at the root). */
    public boolean hasOutput(int rank) {
        return !(primitive == OpType.REDUCE || primitive == OpType.GATHER) || rank == root;
    }

    /** Elements of rank {@code rank}'s output. */
    public int outputCount() {
        switch (primitive) {
            case REDUCE_SCATTER:
            case SCATTER:
                return count / world;
            default:
                return count;
        }
    }
}
