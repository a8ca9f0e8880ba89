package io.jccl.pipeline;

import io.jccl.CollectiveOptions;
import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.util.List;
import java.util.Objects;

/**
 * The local argument checks of every public call, on the caller's thread before anything is sent: a bad argument
 * is an {@link IllegalArgumentException} (a null {@code recv} options a {@link NullPointerException}).
 *
 * <p>A collective call refused here is first handed to the {@link Refusals} (the communicator's ordered
 * execution): it takes the call's sequence number and tells the peers, so that where every rank refused the call
 * the communicator stays usable and in step, and where only some did, the peers that run it fail at once, naming
 * this rank and its reason, instead of waiting for it until their deadline. A refused send tells its receiver
 * ({@link PointToPoint}); a refused receive needs nobody told, since no sender waits for it.
 */
final class ArgumentChecks {
    /** Where a refused collective call goes before its exception is thrown. */
    interface Refusals {
        void refused(OpType op, String reason);
    }

    private final int rank;
    private final int size;
    private volatile Refusals refusals;

    ArgumentChecks(int rank, int size) {
        this.rank = rank;
        this.size = size;
    }

    /** Has refused collective calls go to {@code r} (set once the communicator's execution is made). */
    void refusals(Refusals r) {
        this.refusals = r;
    }

    /**
     * A refusal of a bad argument of a call of {@code op}, naming this rank; a collective call's first goes to the
     * {@link Refusals}.
     */
    IllegalArgumentException bad(OpType op, String what) {
        String reason = "rank " + rank + ": " + what;
        Refusals r = refusals;
        if (r != null && op != OpType.SEND && op != OpType.RECV) {
            r.refused(op, reason);
        }
        return new IllegalArgumentException(reason);
    }

    void allReduce(Tensor t, ReduceOp op) {
        requireTensor(OpType.ALL_REDUCE, t, "tensor");
        requireOp(OpType.ALL_REDUCE, op, t.dtype());
    }

    /** Returns the elements of all {@code tensors}, which share one dtype. */
    int allReduceCoalesced(List<Tensor> tensors, ReduceOp op) {
        if (tensors == null || tensors.isEmpty()) {
            throw bad(OpType.ALL_REDUCE, "allReduceCoalesced: no tensors");
        }
        DataType dt = tensors.get(0) == null ? null : tensors.get(0).dtype();
        long total = 0;
        for (Tensor t : tensors) {
            requireTensor(OpType.ALL_REDUCE, t, "a tensor");
            if (t.dtype() != dt) {
                throw bad(OpType.ALL_REDUCE, "allReduceCoalesced: every tensor must have one dtype: "
                        + dt + " and " + t.dtype());
            }
            total += t.count();
        }
        if (total > Integer.MAX_VALUE - 8) {
            throw bad(OpType.ALL_REDUCE, "allReduceCoalesced: " + total + " elements in all exceed one buffer");
        }
        requireOp(OpType.ALL_REDUCE, op, dt);
        return (int) total;
    }

    void broadcast(Tensor t, int root) {
        requireTensor(OpType.BROADCAST, t, "tensor");
        requireRoot(OpType.BROADCAST, root);
    }

    void allGather(Tensor in, Tensor out) {
        requireTensor(OpType.ALL_GATHER, in, "input");
        requireTensor(OpType.ALL_GATHER, out, "output");
        requireSameType(OpType.ALL_GATHER, in, out);
        requireCount(OpType.ALL_GATHER, "output", out, (long) in.count() * size,
                "size x input = %d x %d", size, in.count());
    }

    void reduceScatter(Tensor in, Tensor out, ReduceOp op) {
        requireTensor(OpType.REDUCE_SCATTER, in, "input");
        requireTensor(OpType.REDUCE_SCATTER, out, "output");
        requireSameType(OpType.REDUCE_SCATTER, in, out);
        requireOp(OpType.REDUCE_SCATTER, op, in.dtype());
        if (in.count() % size != 0) {
            throw bad(OpType.REDUCE_SCATTER, "reduceScatter input must hold a multiple of the world size ("
                    + size + ") elements, got " + in.count());
        }
        requireCount(OpType.REDUCE_SCATTER, "output", out, in.count() / size,
                "input / size = %d / %d", in.count(), size);
    }

    void reduce(Tensor t, int root, ReduceOp op) {
        requireTensor(OpType.REDUCE, t, "tensor");
        requireRoot(OpType.REDUCE, root);
        requireOp(OpType.REDUCE, op, t.dtype());
    }

    /** The output matters on the root only. */
    void gather(Tensor in, Tensor out, int root) {
        requireTensor(OpType.GATHER, in, "input");
        requireRoot(OpType.GATHER, root);
        if (rank == root) {
            requireTensor(OpType.GATHER, out, "output on the root");
            requireSameType(OpType.GATHER, in, out);
            requireCount(OpType.GATHER, "output", out, (long) in.count() * size,
                    "size x input = %d x %d", size, in.count());
        }
    }

    /** The input matters on the root only. */
    void scatter(Tensor in, Tensor out, int root) {
        requireTensor(OpType.SCATTER, out, "output");
        requireRoot(OpType.SCATTER, root);
        if (rank == root) {
            requireTensor(OpType.SCATTER, in, "input on the root");
            requireSameType(OpType.SCATTER, in, out);
            requireCount(OpType.SCATTER, "input", in, (long) out.count() * size,
                    "size x output = %d x %d", size, out.count());
        }
    }

    void allToAll(Tensor in, Tensor out) {
        requireTensor(OpType.ALL_TO_ALL, in, "input");
        requireTensor(OpType.ALL_TO_ALL, out, "output");
        requireSameType(OpType.ALL_TO_ALL, in, out);
        if (in.count() % size != 0) {
            throw bad(OpType.ALL_TO_ALL, "allToAll input must hold a multiple of the world size (" + size
                    + ") elements, got " + in.count());
        }
        requireCount(OpType.ALL_TO_ALL, "output", out, in.count(), "the input's count", 0, 0);
    }

    /** Checked after the operation's own arguments. */
    void options(OpType op, CollectiveOptions options) {
        if (options == null) {
            throw bad(op, op.label() + " options are null; use CollectiveOptions.DEFAULT");
        }
    }

    void send(Tensor t, int dst) {
        requireTensor(OpType.SEND, t, "tensor");
        requirePeer(OpType.SEND, dst, "dst");
    }

    void recv(Tensor t, int src, CollectiveOptions options) {
        requireTensor(OpType.RECV, t, "tensor");
        requirePeer(OpType.RECV, src, "src");
        Objects.requireNonNull(options, "options");
    }

    // ------------------------------------------------------------------ the checks

    private void requireTensor(OpType op, Tensor t, String what) {
        if (t == null) {
            throw bad(op, op.label() + ": " + what + " is null");
        }
    }

    private void requireSameType(OpType op, Tensor a, Tensor b) {
        if (a.dtype() != b.dtype()) {
            throw bad(op, op.label() + ": input and output dtypes differ: input="
                    + a.dtype() + ", output=" + b.dtype());
        }
    }

    /** {@code why} is a format of {@code x} and {@code y}, made into the message only on failure (no garbage). */
    private void requireCount(OpType op, String what, Tensor t, long expected, String why, long x, long y) {
        if (t.count() != expected) {
            throw bad(op, op.label() + ": " + what + " must hold " + expected + " elements ("
                    + String.format(why, x, y) + "), got " + t.count());
        }
    }

    private void requireOp(OpType op, ReduceOp r, DataType dtype) {
        if (r == null) {
            throw bad(op, op.label() + ": reduce op is null");
        }
        if (!r.supports(dtype)) {
            throw bad(op, op.label() + ": reduce op " + r + " is not defined for " + dtype
                    + "; bitwise ops need an integer type");
        }
    }

    private void requireRoot(OpType op, int root) {
        if (root < 0 || root >= size) {
            throw bad(op, op.label() + ": root must be in [0, " + size + "), got " + root);
        }
    }

    private void requirePeer(OpType op, int peer, String what) {
        if (peer < 0 || peer >= size || peer == rank) {
            throw bad(op, op.label() + ": " + what + " must be another rank in [0, " + size
                    + "), got " + peer);
        }
    }
}
