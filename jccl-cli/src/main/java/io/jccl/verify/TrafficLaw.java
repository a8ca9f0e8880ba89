package io.jccl.verify;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.Communicator;
import io.jccl.Jccl;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.util.ArrayList;
import java.util.List;

/**
 * The per-rank byte counter table: one float32 call of each primitive, and the bytes each rank sent and received
 * next to the textbook law (T = tensor bytes; allreduce 2T(N-1)/N, allgather and reduce_scatter T(N-1)/N of the
 * full buffer, broadcast T received by every non-root rank), for the message algorithms those laws describe: the
 * rings and the binomial-tree broadcast, whatever algorithm the rest of the run uses.
 */
public final class TrafficLaw {
    private TrafficLaw() {
    }

    /** One rank's traffic for one primitive. */
    public static final class Row {
        public final String primitive;
        public final int world;
        public final int rank;
        public final long tensorBytes;
        public final long sent;
        public final long received;
        public final String law;
        public final long lawBytes;
        /** Which counter the law is checked against: sent or received. */
        public final boolean lawOnReceived;

        Row(String primitive, int world, int rank, long tensorBytes, long sent, long received, String law,
            long lawBytes, boolean lawOnReceived) {
            this.primitive = primitive;
            this.world = world;
            this.rank = rank;
            this.tensorBytes = tensorBytes;
            this.sent = sent;
            this.received = received;
            this.law = law;
            this.lawBytes = lawBytes;
            this.lawOnReceived = lawOnReceived;
        }

        /** measured / law, or NaN when the law predicts nothing. */
        public double ratio() {
            long measured = lawOnReceived ? received : sent;
            return lawBytes == 0 ? (measured == 0 ? 1.0 : Double.NaN) : (double) measured / lawBytes;
        }
    }

    /** The element count measured for a requested count: a multiple of the world size, at least one per rank. */
    static int elements(int world, int count) {
        return Math.max(world, (count + world - 1) / world * world);
    }

    /**
     * This rank's part: one float32 call of each primitive; returns bytes sent and received for allreduce,
     * allgather, reduce_scatter and broadcast, in that order.
     */
    static long[] measureRank(Communicator comm, int n, Algorithm algorithm) {
        int world = comm.size();
        long[] out = new long[8];
        comm.counters().reset();
        // the law is the message algorithms': rings, and the tree broadcast (whatever the table's algorithm)
        CollectiveOptions ring = CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.RING);
        comm.allReduce(Tensor.of(new float[n]), ReduceOp.SUM, ring);
        comm.allGather(Tensor.of(new float[n / world]), Tensor.of(new float[n]), ring);
        comm.reduceScatter(Tensor.of(new float[n]), Tensor.of(new float[n / world]), ReduceOp.SUM, ring);
        comm.broadcast(Tensor.of(new float[n]), 0, CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.TREE));
        OpType[] ops = {OpType.ALL_REDUCE, OpType.ALL_GATHER, OpType.REDUCE_SCATTER, OpType.BROADCAST};
        for (int i = 0; i < ops.length; i++) {
            out[2 * i] = comm.counters().bytesSent(ops[i]);
            out[2 * i + 1] = comm.counters().bytesReceived(ops[i]);
        }
        return out;
    }

    /** Measures every rank, as threads, for a buffer of {@code count} float32 elements. */
    public static List<Row> measure(int world, int count, Algorithm algorithm) {
        int n = elements(world, count);
        return rows(world, n, Jccl.runThreads(world, comm -> measureRank(comm, n, algorithm)));
    }

    /** The table from every rank's {@link #measureRank} counters. */
    static List<Row> rows(int world, int n, List<long[]> counts) {
        long t = 4L * n;
        List<Row> rows = new ArrayList<>();
        long ring2 = 2 * t * (world - 1) / world;
        long ring1 = t * (world - 1) / world;
        for (int r = 0; r < world; r++) {
            long[] c = counts.get(r);
            rows.add(new Row("all_reduce", world, r, t, c[0], c[1], "2T(N-1)/N", ring2, false));
            rows.add(new Row("all_gather", world, r, t, c[2], c[3], "T(N-1)/N", ring1, false));
            rows.add(new Row("reduce_scatter", world, r, t, c[4], c[5], "T(N-1)/N", ring1, false));
            rows.add(new Row("broadcast", world, r, t, c[6], c[7], r == 0 ? "0 (root)" : "T", r == 0 ? 0 : t, true));
        }
        return rows;
    }
}
