package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Two-pass ring allreduce in gloo's summation order: a reduce-scatter pass, then an allgather pass.
 *
 * <p>The buffer is cut into P chunks by {@link GlooChunking}. Data flows from rank r to rank r-1. Reduce-scatter,
 * steps s = 0..P-2: rank r sends chunk (r+1+s) mod P to r-1 and receives chunk (r+2+s) mod P from r+1, reducing
 * it into its copy; afterwards rank r holds chunk r reduced in the order x[r-1], x[r-2], ..., x[r] (ranks mod P),
 * exactly gloo's. Allgather, steps P-1..2P-3: rank r sends the finished chunk (r+s) mod P to r-1 and stores chunk
 * (r+s+1) mod P from r+1.
 *
 * <p>Segmented and pipelined: a chunk travels as segments of at most {@link #SEGMENT_BYTES}, and a rank sends
 * segment j+1 before it takes in segment j, so it reduces one segment while the next is on its way and its
 * neighbour already works on the previous one. Segments do not change which values are summed in which order:
 * results stay gloo's bit for bit.
 *
 * <p>Cost: {@link #predictMicros}; the bytes travel in 2(P-1) ceil(chunk / segment) messages. A signature
 * mismatch fails every rank: a rank that stops after its first receive starves every other rank of the 2(P-1)
 * frames it needs.
 */
public final class RingAllReduce implements CollectiveAlgorithm {
    /** The largest message of the ring: bigger chunks travel in segments of this size. */
    public static final int SEGMENT_BYTES = 1 << 20;

    @Override
    public OpType operation() {
        return OpType.ALL_REDUCE;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.RING;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allReduce(call, operands.data(), operands.reduceOp());
    }

    /** 2(P-1) steps; 2T(P-1)/P bytes sent and as many received per rank when chunks are equal (T = buffer bytes). */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        return messages.micros(2 * (p - 1), 2 * t * (p - 1) / p);
    }

    public static void allReduce(CollectiveCall call, Buf data, ReduceOp op) {
        int p = call.size();
        if (p == 1) {
            return;
        }
        int[] bounds = GlooChunking.bounds(data.count(), data.dtype().sizeBytes(), p);
        reduceScatterPhase(call, data, op, bounds);
        allGatherPhase(call, data, bounds, p - 1);
    }

    /** Steps 0..P-2: afterwards this rank holds chunk {@code rank} of {@code data} fully reduced. */
    static void reduceScatterPhase(CollectiveCall call, Buf data, ReduceOp op, int[] bounds) {
        reduceScatterPhase(call, data, data, op, bounds);
    }

    /**
     * As {@link #reduceScatterPhase(CollectiveCall, Buf, ReduceOp, int[])} out of place: {@code input} is only read,
     * and {@code data} (as many elements) ends holding the reduced chunk r; its other chunks hold partial sums,
     * except chunk r+1, which is sent straight from {@code input} and never written. Each received segment is
     * reduced with the input's into {@code data} ({@link CollectiveCall#postRecv(int, Buf, ReduceOp, Buf)}), so
     * the input is read once, with the same operations and bits as a copy of it reduced in place.
     */
    static void reduceScatterPhase(CollectiveCall call, Buf input, Buf data, ReduceOp op, int[] bounds) {
        int p = call.size();
        int r = call.rank();
        int to = (r - 1 + p) % p;
        int from = (r + 1) % p;
        boolean inPlace = input == data;
        for (int s = 0; s < p - 1; s++) {
            call.step(s, "reduce-scatter");
            int out = (r + 1 + s) % p;
            int in = (r + 2 + s) % p;
            exchange(call, to, chunk(s == 0 ? input : data, bounds, out), from, chunk(data, bounds, in), op,
                    inPlace ? null : chunk(input, bounds, in));
        }
    }

    /** Steps first..first+P-2: circulates the finished chunks until every rank has all of them. */
    static void allGatherPhase(CollectiveCall call, Buf data, int[] bounds, int firstStep) {
        int p = call.size();
        int r = call.rank();
        int to = (r - 1 + p) % p;
        int from = (r + 1) % p;
        for (int s = 0; s < p - 1; s++) {
            call.step(firstStep + s, "allgather");
            exchange(call, to, chunk(data, bounds, (r + s) % p), from, chunk(data, bounds, (r + s + 1) % p), null);
        }
    }

    /**
     * One ring step: sends {@code out} to {@code to} and takes {@code in} from {@code from} (reducing with
     * {@code op}, or copying when it is null), segment by segment. Every segment's receive is posted before the
     * first send (a transport with reader threads then places each as it arrives, while this rank sends), and
     * segment j+1 is sent before segment j is waited for. An empty chunk is one empty message.
     */
    static void exchange(CollectiveCall call, int to, Buf out, int from, Buf in, ReduceOp op) {
        exchange(call, to, out, from, in, op, null);
    }

    /** As above, {@code in} becoming {@code base op payload} when {@code base} (as many elements) is given. */
    static void exchange(CollectiveCall call, int to, Buf out, int from, Buf in, ReduceOp op, Buf base) {
        int seg = Math.max(1, SEGMENT_BYTES / out.dtype().sizeBytes());
        int outSegments = segments(out.count(), seg);
        int inSegments = segments(in.count(), seg);
        CollectiveCall.Receive[] posted = new CollectiveCall.Receive[inSegments];
        for (int j = 0; j < inSegments; j++) {
            posted[j] = call.postRecv(from, segment(in, j, seg), op, base == null ? null : segment(base, j, seg));
        }
        call.send(to, segment(out, 0, seg));
        for (int j = 0; j < Math.max(outSegments, inSegments); j++) {
            if (j + 1 < outSegments) {
                call.send(to, segment(out, j + 1, seg));
            }
            if (j < inSegments) {
                call.complete(posted[j]);
            }
        }
    }

    private static int segments(int count, int seg) {
        return Math.max(1, (count + seg - 1) / seg);
    }

    static Buf segment(Buf b, int j, int seg) {
        int from = j * seg;
        return b.slice(from, Math.min(seg, b.count() - from));
    }

    static Buf chunk(Buf data, int[] bounds, int c) {
        return data.slice(bounds[c], bounds[c + 1] - bounds[c]);
    }
}
