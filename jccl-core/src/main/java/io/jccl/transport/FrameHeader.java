package io.jccl.transport;

/**
 * The decoded fields of a frame header; see {@link FrameDescriptor} for the byte layout and the meaning of each
 * field. One-byte fields are held as unsigned ints ({@code 0xFF} means "does not apply").
 */
public final class FrameHeader {
    private final byte type;
    private final int operation;
    private final int dtype;
    private final int reduceOp;
    private final int algorithm;
    private final int source;
    private final int root;
    private final long sequence;
    private final long count;
    private final int step;
    private final int payloadCount;
    private final int stream;

    public FrameHeader(byte type, int operation, int dtype, int reduceOp, int algorithm, int source, int root,
                       long sequence, long count, int step, int payloadCount, int stream) {
        this.type = type;
        this.operation = operation;
        this.dtype = dtype;
        this.reduceOp = reduceOp;
        this.algorithm = algorithm;
        this.source = source;
        this.root = root;
        this.sequence = sequence;
        this.count = count;
        this.step = step;
        this.payloadCount = payloadCount;
        this.stream = stream;
    }

    /** The ordered stream this frame belongs to (see {@link Streams}). */
    public int stream() {
        return stream;
    }

    public byte type() {
        return type;
    }

    public boolean isAbort() {
        return type == FrameDescriptor.TYPE_ABORT;
    }

    public int operation() {
        return operation;
    }

    public int dtype() {
        return dtype;
    }

    public int reduceOp() {
        return reduceOp;
    }

    public int algorithm() {
        return algorithm;
    }

    public int source() {
        return source;
    }

    public int root() {
        return root;
    }

    public long sequence() {
        return sequence;
    }

    public long count() {
        return count;
    }

    public int step() {
        return step;
    }

    public int payloadCount() {
        return payloadCount;
    }

    /** The same header from another source rank (sub-communicators renumber ranks). */
    public FrameHeader withSource(int newSource) {
        return new FrameHeader(type, operation, dtype, reduceOp, algorithm, newSource, root, sequence, count, step,
                payloadCount, stream);
    }

    /** The same header with another step and payload count. */
    public FrameHeader withStep(int newStep, int newPayloadCount) {
        return new FrameHeader(type, operation, dtype, reduceOp, algorithm, source, root, sequence, count, newStep,
                newPayloadCount, stream);
    }

    @Override
    public String toString() {
        return "FrameHeader{type=" + type + ", operation=" + operation + ", dtype=" + dtype + ", reduceOp=" + reduceOp
                + ", algorithm=" + algorithm + ", source=" + source + ", root=" + root + ", sequence=" + sequence
                + ", count=" + count + ", step=" + step + ", payloadCount=" + payloadCount + ", stream=" + stream + '}';
    }
}
