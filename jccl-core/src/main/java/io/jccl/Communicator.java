package io.jccl;

import io.jccl.instrument.TrafficCounters;

/**
 * A group of ranks that run collectives together (torch's ProcessGroup, NCCL's ncclComm).
 *
 * <p>Every rank calls the same collectives in the same order with agreeing arguments; a rank whose call
 * disagrees, times out or fails makes every rank raise a {@link JcclException} that names the rank, the
 * operation, its sequence number and what went wrong, after which the communicator refuses further calls
 * ({@link CommunicatorAbortedException}). Arguments that are wrong locally raise {@link IllegalArgumentException}
 * before anything is sent.
 *
 * <p>Each collective has a synchronous form and an {@code ...Async} form returning a {@link Work}; all of a
 * communicator's collectives execute in call order. Tensors are modified in place where the operation has one
 * buffer ({@code allReduce}, {@code broadcast}, {@code reduce}); an asynchronous call owns its tensors until its
 * work completes.
 */
public interface Communicator extends AutoCloseable {

    int rank();

    int size();

    /** The transport's name: {@code local} for threads in one JVM. */
    String transportName();

    /** Bytes and messages sent and received by this rank, per operation. */
    TrafficCounters counters();

    /**
     * The algorithm a call of {@code op} on {@code count} elements of {@code dtype} with default options would
     * run: the communicator's configured choice for {@code op}, else what AUTO's cost model picks ({@code count}
     * as the call's signature counts it: the input of allreduce, broadcast and allgather, the output of
     * reduce_scatter).
     */
    Algorithm algorithmFor(OpType op, DataType dtype, long count);

    /**
     * A zeroed tensor of {@code count} elements that this communicator's peers can read in place: on the shm
     * transport a direct buffer in this rank's registered region of shared memory ({@code JCCL_SHM_REGISTERED_BYTES},
     * handed out in order and kept until the transport closes), so that a shared-memory allreduce on it copies
     * nothing into or out of exchange buffers; elsewhere a plain array (threads read arrays in place already).
     * Use it for long-lived buffers such as gradient buckets.
     *
     * @throws IllegalArgumentException when the registered region has no room left
     */
    Tensor allocate(DataType dtype, int count);

    // ---- allReduce

    /** Every rank ends with the element-wise reduction of every rank's {@code tensor}. */
    void allReduce(Tensor tensor, ReduceOp op, CollectiveOptions options);

    Work allReduceAsync(Tensor tensor, ReduceOp op, CollectiveOptions options);

    default void allReduce(Tensor tensor, ReduceOp op) {
        allReduce(tensor, op, CollectiveOptions.DEFAULT);
    }

    default void allReduce(float[] data, ReduceOp op) {
        allReduce(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    default void allReduce(double[] data, ReduceOp op) {
        allReduce(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    default Work allReduceAsync(Tensor tensor, ReduceOp op) {
        return allReduceAsync(tensor, op, CollectiveOptions.DEFAULT);
    }

    /** {@link #allReduce(Tensor, ReduceOp)} with {@link ReduceOp#SUM}, torch's default. */
    default void allReduce(Tensor tensor) {
        allReduce(tensor, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    /** {@link #allReduceAsync(Tensor, ReduceOp)} with {@link ReduceOp#SUM}. */
    default Work allReduceAsync(Tensor tensor) {
        return allReduceAsync(tensor, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    /** Sums {@code data} over every rank, in place. */
    default void allReduce(float[] data) {
        allReduce(Tensor.of(data));
    }

    /** Sums {@code data} over every rank, in place. */
    default void allReduce(double[] data) {
        allReduce(Tensor.of(data));
    }

    /** Sums {@code data} over every rank, in place. */
    default void allReduce(int[] data) {
        allReduce(Tensor.of(data));
    }

    /** Sums {@code data} over every rank, in place. */
    default void allReduce(long[] data) {
        allReduce(Tensor.of(data));
    }

    /** Reduces {@code data} with {@code op} over every rank, in place. */
    default void allReduce(int[] data, ReduceOp op) {
        allReduce(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /** Reduces {@code data} with {@code op} over every rank, in place. */
    default void allReduce(long[] data, ReduceOp op) {
        allReduce(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /**
     * Reduces {@code data}, elements of {@code dtype} ({@code INT8} or {@code UINT8}), with
     * {@code op} over every rank, in place.
     */
    default void allReduce(byte[] data, DataType dtype, ReduceOp op) {
        allReduce(Tensor.of(data, dtype), op, CollectiveOptions.DEFAULT);
    }

    /**
     * Reduces {@code data}, elements of {@code dtype} ({@code FLOAT16} or {@code BFLOAT16} bits), with
     * {@code op} over every rank, in place.
     */
    default void allReduce(short[] data, DataType dtype, ReduceOp op) {
        allReduce(Tensor.of(data, dtype), op, CollectiveOptions.DEFAULT);
    }

    /** {@link #allReduce(float[], ReduceOp)}, asynchronously: {@code data} is the call's until its work is done. */
    default Work allReduceAsync(float[] data, ReduceOp op) {
        return allReduceAsync(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /** {@link #allReduce(double[], ReduceOp)}, asynchronously. */
    default Work allReduceAsync(double[] data, ReduceOp op) {
        return allReduceAsync(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /** {@link #allReduce(int[], ReduceOp)}, asynchronously. */
    default Work allReduceAsync(int[] data, ReduceOp op) {
        return allReduceAsync(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /** {@link #allReduce(long[], ReduceOp)}, asynchronously. */
    default Work allReduceAsync(long[] data, ReduceOp op) {
        return allReduceAsync(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /** {@link #allReduce(byte[], DataType, ReduceOp)}, asynchronously. */
    default Work allReduceAsync(byte[] data, DataType dtype, ReduceOp op) {
        return allReduceAsync(Tensor.of(data, dtype), op, CollectiveOptions.DEFAULT);
    }

    /** {@link #allReduce(short[], DataType, ReduceOp)}, asynchronously. */
    default Work allReduceAsync(short[] data, DataType dtype, ReduceOp op) {
        return allReduceAsync(Tensor.of(data, dtype), op, CollectiveOptions.DEFAULT);
    }

    /**
     * Allreduces many tensors of one dtype as one operation (the bucketing primitive): they are packed into one
     * buffer, reduced with one allreduce, and unpacked. The result of each element equals that of an allreduce
     * of the concatenation.
     */
    void allReduceCoalesced(java.util.List<Tensor> tensors, ReduceOp op, CollectiveOptions options);

    Work allReduceCoalescedAsync(java.util.List<Tensor> tensors, ReduceOp op, CollectiveOptions options);

    default void allReduceCoalesced(java.util.List<Tensor> tensors, ReduceOp op) {
        allReduceCoalesced(tensors, op, CollectiveOptions.DEFAULT);
    }

    /** {@link #allReduceCoalesced(java.util.List, ReduceOp)} with {@link ReduceOp#SUM}. */
    default void allReduceCoalesced(java.util.List<Tensor> tensors) {
        allReduceCoalesced(tensors, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    // ---- broadcast

    /** Every rank ends with {@code root}'s {@code tensor}. */
    void broadcast(Tensor tensor, int root, CollectiveOptions options);

    Work broadcastAsync(Tensor tensor, int root, CollectiveOptions options);

    default void broadcast(Tensor tensor, int root) {
        broadcast(tensor, root, CollectiveOptions.DEFAULT);
    }

    default void broadcast(float[] data, int root) {
        broadcast(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /** Every rank ends with {@code root}'s {@code data}. */
    default void broadcast(double[] data, int root) {
        broadcast(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /** Every rank ends with {@code root}'s {@code data}. */
    default void broadcast(int[] data, int root) {
        broadcast(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /** Every rank ends with {@code root}'s {@code data}. */
    default void broadcast(long[] data, int root) {
        broadcast(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /** Every rank ends with {@code root}'s {@code data}, elements of {@code dtype}. */
    default void broadcast(byte[] data, DataType dtype, int root) {
        broadcast(Tensor.of(data, dtype), root, CollectiveOptions.DEFAULT);
    }

    /** Every rank ends with {@code root}'s {@code data}, elements of {@code dtype}. */
    default void broadcast(short[] data, DataType dtype, int root) {
        broadcast(Tensor.of(data, dtype), root, CollectiveOptions.DEFAULT);
    }

    /** {@link #broadcast(float[], int)}, asynchronously: {@code data} is the call's until its work is done. */
    default Work broadcastAsync(float[] data, int root) {
        return broadcastAsync(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /** {@link #broadcast(double[], int)}, asynchronously. */
    default Work broadcastAsync(double[] data, int root) {
        return broadcastAsync(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /** {@link #broadcast(int[], int)}, asynchronously. */
    default Work broadcastAsync(int[] data, int root) {
        return broadcastAsync(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /** {@link #broadcast(long[], int)}, asynchronously. */
    default Work broadcastAsync(long[] data, int root) {
        return broadcastAsync(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    default Work broadcastAsync(Tensor tensor, int root) {
        return broadcastAsync(tensor, root, CollectiveOptions.DEFAULT);
    }

    // ---- allGather

    /** {@code output} (size x input elements) receives rank i's {@code input} in block i, on every rank. */
    void allGather(Tensor input, Tensor output, CollectiveOptions options);

    Work allGatherAsync(Tensor input, Tensor output, CollectiveOptions options);

    default void allGather(Tensor input, Tensor output) {
        allGather(input, output, CollectiveOptions.DEFAULT);
    }

    default Work allGatherAsync(Tensor input, Tensor output) {
        return allGatherAsync(input, output, CollectiveOptions.DEFAULT);
    }

    /**
     * Every rank's {@code data}, whatever its length, in rank order, on every rank (XGBoost's AllgatherV): entry
     * i is a copy of rank i's array. Two calls: an allgather of the lengths, then a ring that moves each array
     * once around (every rank receives the others' bytes once, no padding). Bytes, not objects: serialize with
     * whatever the program already uses; no Java serialization happens on the wire.
     */
    byte[][] allGatherV(byte[] data);

    /**
     * Every rank's {@code data}, whatever its length, in rank order, on {@code root} (entry i: rank i's bytes);
     * null on the other ranks. Two calls: an allgather of the lengths, then every rank sends its bytes to the root.
     */
    byte[][] gatherV(byte[] data, int root);

    // ---- reduceScatter

    /**
     * Reduces every rank's {@code input} (size x output elements) element-wise; rank i receives block i of the
     * result in {@code output}. Bit-identical to the same block of {@link #allReduce} on the same inputs.
     */
    void reduceScatter(Tensor input, Tensor output, ReduceOp op, CollectiveOptions options);

    Work reduceScatterAsync(Tensor input, Tensor output, ReduceOp op, CollectiveOptions options);

    default void reduceScatter(Tensor input, Tensor output, ReduceOp op) {
        reduceScatter(input, output, op, CollectiveOptions.DEFAULT);
    }

    default Work reduceScatterAsync(Tensor input, Tensor output, ReduceOp op) {
        return reduceScatterAsync(input, output, op, CollectiveOptions.DEFAULT);
    }

    /** {@link #reduceScatter(Tensor, Tensor, ReduceOp)} with {@link ReduceOp#SUM}. */
    default void reduceScatter(Tensor input, Tensor output) {
        reduceScatter(input, output, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    /** {@link #reduceScatterAsync(Tensor, Tensor, ReduceOp)} with {@link ReduceOp#SUM}. */
    default Work reduceScatterAsync(Tensor input, Tensor output) {
        return reduceScatterAsync(input, output, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    // ---- reduce

    /** {@code root}'s {@code tensor} receives the reduction of every rank's; other ranks' tensors are unchanged. */
    void reduce(Tensor tensor, int root, ReduceOp op, CollectiveOptions options);

    Work reduceAsync(Tensor tensor, int root, ReduceOp op, CollectiveOptions options);

    default void reduce(Tensor tensor, int root, ReduceOp op) {
        reduce(tensor, root, op, CollectiveOptions.DEFAULT);
    }

    /** {@link #reduce(Tensor, int, ReduceOp)} with {@link ReduceOp#SUM}. */
    default void reduce(Tensor tensor, int root) {
        reduce(tensor, root, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    // ---- gather

    /** {@code root}'s {@code output} (size x input elements) receives rank i's input in block i; null elsewhere. */
    void gather(Tensor input, Tensor output, int root, CollectiveOptions options);

    Work gatherAsync(Tensor input, Tensor output, int root, CollectiveOptions options);

    default void gather(Tensor input, Tensor output, int root) {
        gather(input, output, root, CollectiveOptions.DEFAULT);
    }

    // ---- scatter

    /** Rank i's {@code output} receives block i of {@code root}'s {@code input} (null on other ranks). */
    void scatter(Tensor input, Tensor output, int root, CollectiveOptions options);

    Work scatterAsync(Tensor input, Tensor output, int root, CollectiveOptions options);

    default void scatter(Tensor input, Tensor output, int root) {
        scatter(input, output, root, CollectiveOptions.DEFAULT);
    }

    // ---- allToAll

    /** Block j of rank i's {@code input} becomes block i of rank j's {@code output}; both hold size equal blocks. */
    void allToAll(Tensor input, Tensor output, CollectiveOptions options);

    Work allToAllAsync(Tensor input, Tensor output, CollectiveOptions options);

    default void allToAll(Tensor input, Tensor output) {
        allToAll(input, output, CollectiveOptions.DEFAULT);
    }

    // ---- barrier

    /** Returns once every rank has entered the barrier. */
    void barrier(CollectiveOptions options);

    Work barrierAsync(CollectiveOptions options);

    default void barrier() {
        barrier(CollectiveOptions.DEFAULT);
    }

    /**
     * A barrier with its own timeout that names every rank that did not arrive (torch's {@code monitored_barrier}):
     * each rank reports to rank 0, which waits for all of them until {@code timeout}, then releases them, or fails
     * listing every rank missing; the others fail with rank 0's message. Slower than {@link #barrier()} (rank 0
     * hears from every rank): a debugging aid, as in torch.
     */
    void monitoredBarrier(java.time.Duration timeout);

    // ---- point to point

    /**
     * Sends {@code tensor} to {@code dst}; returns once it is handed to the transport. Matched, in order, with the
     * {@link #recv} on {@code dst} of the same tag, count and dtype; a disagreement fails the receiver.
     */
    void send(Tensor tensor, int dst, int tag);

    /** Receives into {@code tensor} the next message {@code src} sent to this rank. */
    void recv(Tensor tensor, int src, int tag, CollectiveOptions options);

    default void recv(Tensor tensor, int src, int tag) {
        recv(tensor, src, tag, CollectiveOptions.DEFAULT);
    }

    /**
     * Sends {@code tensor} to {@code dst} without waiting (torch's {@code isend}); the tensor is the call's until
     * the returned work completes. Sends of this rank to one peer leave in the order called, synchronous or not.
     */
    Work isend(Tensor tensor, int dst, int tag);

    /**
     * Receives into {@code tensor} the next message from {@code src} without waiting (torch's {@code irecv}); the
     * tensor holds it once the returned work completes. Receives from one peer are matched in the order called.
     */
    Work irecv(Tensor tensor, int src, int tag);

    /**
     * Starts every operation of {@code ops} ({@link P2POp#isend}, {@link P2POp#irecv}) in list order and returns
     * their works in that order (torch's {@code batch_isend_irecv}). Sends never wait for the matching receive,
     * so a batch completes whatever order its operations, or its peers' operations, are listed in.
     */
    default java.util.List<Work> batchIsendIrecv(java.util.List<P2POp> ops) {
        java.util.Objects.requireNonNull(ops, "ops");
        java.util.List<Work> works = new java.util.ArrayList<>(ops.size());
        for (P2POp op : ops) {
            java.util.Objects.requireNonNull(op, "ops contains null");
            works.add(op.isSend() ? isend(op.tensor(), op.peer(), op.tag()) : irecv(op.tensor(), op.peer(), op.tag()));
        }
        return works;
    }

    /** The color that leaves a rank out of every group of {@link #split}. */
    int UNDEFINED = -1;

    /**
     * Splits this communicator into sub-groups (MPI_Comm_split): a collective call; ranks that pass the same
     * {@code color} form one new communicator, ranked by {@code key} and then by their rank here. A rank that
     * passes {@link #UNDEFINED} gets null. The sub-communicator shares this one's links and has its own streams,
     * sequence numbers and counters; close it before this one.
     */
    Communicator split(int color, int key);

    /**
     * A communicator of the ranks {@code ranks} of this one (torch's {@code new_group}), ranked in increasing order
     * of their rank here; null on the ranks not in it. A collective call: every rank of this communicator calls it
     * with the same ranks, in any order (a rank whose list differs makes every rank fail, naming it). Built on
     * {@link #split}: it shares this one's links; close it before this one.
     */
    Communicator newGroup(int... ranks);

    /**
     * This rank's flight record as JSON: its last calls (2,000 by default, {@code JCCL_FLIGHT_RECORDER_ENTRIES}) on
     * this communicator, the one it was split from and their sub-groups, each with its state, timestamps and, for a
     * call still waiting, the step and the rank (of that call's communicator) it waits for. See
     * docs/diagnostics.md.
     */
    String flightRecorderJson();

    /**
     * Writes this rank's flight record into {@code JCCL_FLIGHT_RECORDER_DIR} as {@code jccl_fr_rank<r>.json} and
     * returns the file ({@code jccl analyze DIR} reads every rank's); each rank also writes it on its first failure.
     *
     * @throws IllegalStateException when {@code JCCL_FLIGHT_RECORDER_DIR} is not set
     */
    java.nio.file.Path dumpFlightRecorder();

    /**
     * Fails this communicator and tells every peer, which then raise {@link PeerAbortedException} (ncclCommAbort).
     */
    void abort(String reason);

    /** Releases this rank's resources; later calls raise {@link CommunicatorAbortedException}. */
    @Override
    void close();
}
