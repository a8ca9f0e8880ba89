package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import io.jccl.algorithm.CollectiveAlgorithm;
import io.jccl.algorithm.Operands;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

import java.time.Duration;

/**
 * A validated collective call, waiting for its sequence number: its signature but for the sequence, the algorithm
 * that will run it, its timeout, whether a hierarchical algorithm overlaps its phases within and across hosts
 * ({@link CollectiveCall#overlapsHosts}), its tensors, and the body that stages them and runs the algorithm.
 *
 * <p>Reused: {@link CallFactory} lends one out per call and takes it back when the call has ended
 * ({@link CallFactory#release}), so that a program making one call after another makes no object per call. While
 * lent it belongs to its call alone. It also keeps the windows it staged its tensors in ({@link #stage}) and the
 * operands it made of them, for the next call on the same small tensors.
 */
final class PreparedCall {
    /** Tensors up to this size keep their staged window between calls (larger ones are not held on to). */
    static final long KEEP_BYTES = 64 << 10;

    /** What a call does around its algorithm: staging, the run, AVG's division, unstaging. */
    interface Body {
        void run(PreparedCall p, CollectiveCall call, CollectiveAlgorithm algorithm);
    }

    private OpType op;
    private DataType dtype;
    private long count;
    private int root;
    private ReduceOp reduceOp;
    private Algorithm algorithm;
    private CollectiveAlgorithm implementation;
    private Duration timeout;
    private boolean overlapHosts;
    private Body body;
    private Tensor in;
    private Tensor out;

    /** The windows {@link #stage} made, by slot (0: in, 1: out), and the tensors they are of. */
    private final Tensor[] stagedTensor = new Tensor[2];
    private final Buf[] staged = new Buf[2];
    /** The operands {@link #operands} made last. */
    private Operands operands;

    PreparedCall fill(OpType op, DataType dtype, long count, int root, ReduceOp reduceOp, Algorithm algorithm,
                      CollectiveAlgorithm implementation, Duration timeout, boolean overlapHosts, Body body, Tensor in,
                      Tensor out) {
        this.op = op;
        this.dtype = dtype;
        this.count = count;
        this.root = root;
        this.reduceOp = reduceOp;
        this.algorithm = algorithm;
        this.implementation = implementation;
        this.timeout = timeout;
        this.overlapHosts = overlapHosts;
        this.body = body;
        this.in = in;
        this.out = out;
        return this;
    }

    /** Lets go of this call's tensors and body (its staged windows of small tensors stay, see {@link #stage}). */
    void clear() {
        this.body = null;
        this.in = null;
        this.out = null;
        this.implementation = null;
    }

    OpType op() {
        return op;
    }

    DataType dtype() {
        return dtype;
    }

    long count() {
        return count;
    }

    int root() {
        return root;
    }

    ReduceOp reduceOp() {
        return reduceOp;
    }

    Algorithm algorithm() {
        return algorithm;
    }

    CollectiveAlgorithm implementation() {
        return implementation;
    }

    Duration timeout() {
        return timeout;
    }

    boolean overlapHosts() {
        return overlapHosts;
    }

    Body body() {
        return body;
    }

    /** The call's input tensor (in-place collectives: its only tensor), or null. */
    Tensor in() {
        return in;
    }

    /** The call's output tensor (in-place collectives: the input), or null. */
    Tensor out() {
        return out;
    }

    /**
     * {@code t} as a window ({@link Staging#stage}), in slot {@code slot} (0: input, 1: output): the window made
     * for the same tensor by an earlier call when it can serve again (an array tensor, or a direct buffer worked on
     * in place, of at most {@link #KEEP_BYTES}: tensors are immutable views, so their window is too), or for a
     * new tensor over the same elements of the same array ({@code Tensor.of(array)} on every call); else a new one.
     */
    Buf stage(Staging staging, int slot, Tensor t) {
        Buf kept = staged[slot];
        if (t == stagedTensor[slot] || kept != null && !t.isBuffer() && !kept.isMemory()
                && kept.array() == t.array() && kept.offset() == t.offset() && kept.count() == t.count()
                && kept.dtype() == t.dtype()) {
            return kept; // the same tensor, or a new tensor over the same elements of the same array
        }
        Buf b = staging.stage(t);
        boolean keep = t.byteSize() <= KEEP_BYTES && staging.isView(t);
        stagedTensor[slot] = keep ? t : null;
        staged[slot] = keep ? b : null;
        return b;
    }

    /** {@code new Operands(input, output, reduceOp, root)}, or the last one made when it has these fields. */
    Operands operands(Buf input, Buf output, ReduceOp op, int at) {
        Operands o = operands;
        if (o != null && o.input() == input && o.output() == output && o.reduceOp() == op && o.root() == at) {
            return o;
        }
        o = new Operands(input, output, op, at);
        operands = kept(input) && kept(output) ? o : null; // holds on to no large tensor
        return o;
    }

    private boolean kept(Buf b) {
        return b == null || b == staged[0] || b == staged[1];
    }
}
