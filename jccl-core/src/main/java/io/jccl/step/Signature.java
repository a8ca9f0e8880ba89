package io.jccl.step;

import io.jccl.Algorithm;
import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;

/**
 * What every rank of a correct program agrees on for one call: operation, sequence number, dtype, element count,
 * root, reduce op and algorithm. Carried in every frame header; compared on every receive.
 *
 * <p>Not changed once made, except by the {@link CollectiveCall} that owns it, which refills it when it is reused
 * for a later synchronous call ({@link CollectiveCall#restart}); nothing keeps a signature past its call (errors
 * copy its fields).
 */
public final class Signature {
    private OpType op;
    private long sequence;
    private DataType dtype;
    private long count;
    private int root;
    private ReduceOp reduceOp;
    private Algorithm algorithm;

    public Signature(OpType op, long sequence, DataType dtype, long count, int root, ReduceOp reduceOp,
                     Algorithm algorithm) {
        set(op, sequence, dtype, count, root, reduceOp, algorithm);
    }

    /** Refills this signature for another call (see the class comment). */
    void set(OpType op, long sequence, DataType dtype, long count, int root, ReduceOp reduceOp, Algorithm algorithm) {
        this.op = op;
        this.sequence = sequence;
        this.dtype = dtype;
        this.count = count;
        this.root = root;
        this.reduceOp = reduceOp;
        this.algorithm = algorithm;
    }

    public OpType op() {
        return op;
    }

    public long sequence() {
        return sequence;
    }

    public DataType dtype() {
        return dtype;
    }

    public long count() {
        return count;
    }

    public int root() {
        return root;
    }

    public ReduceOp reduceOp() {
        return reduceOp;
    }

    public Algorithm algorithm() {
        return algorithm;
    }

    /** The operation in headers: a receive matches the sender's {@link OpType#SEND}, errors still say recv. */
    private OpType wireOp() {
        return op == OpType.RECV ? OpType.SEND : op;
    }

    /** The signature {@code h} carries (a receive's header says send: see {@link #header}). */
    public static Signature of(FrameHeader h) {
        int none = FrameDescriptor.NONE & 0xFF;
        return new Signature(OpType.fromId(h.operation()), h.sequence(),
                h.dtype() == none ? null : DataType.fromId(h.dtype()), h.count(), h.root(),
                h.reduceOp() == none ? null : ReduceOp.fromId(h.reduceOp()),
                h.algorithm() == none ? null : Algorithm.fromId(h.algorithm()));
    }

    /** A frame header for this call from {@code source} on {@code stream}. */
    public FrameHeader header(byte type, int source, int step, int payloadCount, int stream) {
        return new FrameHeader(type, wireOp().id(), id(dtype), id(reduceOp), id(algorithm), source, root, sequence,
                count, step, payloadCount, stream);
    }

    /**
     * Writes {@link #header} with these arguments at index {@code at} of {@code dst} (little-endian) without making
     * it: what a call writes into its shared-memory signature slot.
     */
    public void writeHeader(byte type, int source, int step, int payloadCount, int stream, java.nio.ByteBuffer dst,
                            int at) {
        FrameDescriptor.encodeAt(type, wireOp().id(), id(dtype), id(reduceOp), id(algorithm), source, root, sequence,
                count, step, payloadCount, stream, dst, at);
    }

    private static int id(DataType d) {
        return d == null ? FrameDescriptor.NONE & 0xFF : d.id();
    }

    private static int id(ReduceOp r) {
        return r == null ? FrameDescriptor.NONE & 0xFF : r.id();
    }

    private static int id(Algorithm a) {
        return a == null ? FrameDescriptor.NONE & 0xFF : a.id();
    }

    /**
     * The first field in which a peer's header disagrees with this call, as {@code {field, local, peer}}, or null
     * if the signature agrees.
     */
    public String[] firstDifference(FrameHeader h) {
        if (h.operation() != wireOp().id()) {
            return diff("operation", op.label(), opName(h.operation()));
        }
        if (h.sequence() != sequence) {
            return diff("sequence", Long.toString(sequence), Long.toString(h.sequence()));
        }
        int dt = id(dtype);
        if (h.dtype() != dt) {
            return diff("dtype", dtypeName(dt), dtypeName(h.dtype()));
        }
        if (h.count() != count) {
            return diff("count", Long.toString(count), Long.toString(h.count()));
        }
        if (h.root() != root) {
            if (op == OpType.ALL_REDUCE) { // the root field of an allreduce tags an allReduceCoalesced's layout
                return diff("layout", layoutName(root), layoutName(h.root()));
            }
            if (op == OpType.ALL_GATHER) { // and an allgather's, the exchange it is
                return diff("exchange", exchangeName(root), exchangeName(h.root()));
            }
            return diff(op == OpType.SEND || op == OpType.RECV ? "tag" : "root", Integer.toString(root),
                    Integer.toString(h.root()));
        }
        int ro = id(reduceOp);
        if (h.reduceOp() != ro) {
            return diff("reduceOp", reduceOpName(ro), reduceOpName(h.reduceOp()));
        }
        int al = id(algorithm);
        if (h.algorithm() != al) {
            return diff("algorithm", algorithmName(al), algorithmName(h.algorithm()));
        }
        return null;
    }

    private static String[] diff(String field, String local, String peer) {
        return new String[] {field, local, peer};
    }

    /**
     * The root field of an allReduceCoalesced of tensors of {@code counts} elements: a tag of the list's layout, -2
     * or less (an allreduce's own root is -1, which a list of one tensor keeps), so that ranks whose lists split the
     * same total otherwise fail with a mismatch rather than summing one tensor's elements into another's.
     */
    public static int layoutTag(int[] counts) {
        if (counts.length == 1) {
            return -1; // one tensor: the same call as an allreduce of it
        }
        int h = counts.length;
        for (int c : counts) {
            h = 31 * h + c;
        }
        return -2 - (h & 0x3FFFFFFF);
    }

    /**
     * The root field of the allgathers jccl makes for itself, so that none of them pairs with a user's allGather of
     * the same shape or with another of them (split's colours and keys with allGatherV's lengths, two ints each):
     * {@code split}'s colours and keys, {@code newGroup}'s lists, the lengths (and roots) of {@code allGatherV} and
     * {@code gatherV}, and {@code allGatherV}'s blocks. A user's allGather has -1.
     */
    public static final int EXCHANGE_SPLIT = -3;
    /** See {@link #EXCHANGE_SPLIT}. */
    public static final int EXCHANGE_NEW_GROUP = -4;
    /** See {@link #EXCHANGE_SPLIT}. */
    public static final int EXCHANGE_LENGTHS = -5;
    /** See {@link #EXCHANGE_SPLIT}. */
    public static final int EXCHANGE_BLOCKS = -6;

    private static String exchangeName(int root) {
        switch (root) {
            case -1: return "a user's allGather";
            case EXCHANGE_SPLIT: return "split's exchange of colours and keys";
            case EXCHANGE_NEW_GROUP: return "newGroup's exchange of member lists";
            case EXCHANGE_LENGTHS: return "allGatherV's or gatherV's exchange of lengths";
            case EXCHANGE_BLOCKS: return "allGatherV's exchange of blocks";
            default: return "root " + root;
        }
    }

    private static String layoutName(int root) {
        return root == -1 ? "one tensor (allReduce)" : "tensors of layout tag " + root + " (allReduceCoalesced)";
    }

    private static String opName(int id) {
        return name(id, i -> OpType.fromId(i).label());
    }

    private static String dtypeName(int id) {
        return name(id, i -> DataType.fromId(i).name());
    }

    private static String reduceOpName(int id) {
        return name(id, i -> ReduceOp.fromId(i).name());
    }

    private static String algorithmName(int id) {
        return name(id, i -> Algorithm.fromId(i).name());
    }

    /** The name of a one-byte header field: "none" for {@link FrameDescriptor#NONE}, "unknown(id)" if invalid. */
    private static String name(int id, java.util.function.IntFunction<String> lookup) {
        if (id == (FrameDescriptor.NONE & 0xFF)) {
            return "none";
        }
        try {
            return lookup.apply(id);
        } catch (IllegalArgumentException e) {
            return "unknown(" + id + ")";
        }
    }
}
