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

    // ---- reduce

    /** {@code root}'s {@code tensor} receives the reduction of every rank's; other ranks' tensors are unchanged. */
    void reduce(Tensor tensor, int root, ReduceOp op, CollectiveOptions options);

    Work reduceAsync(Tensor tensor, int root, ReduceOp op, CollectiveOptions options);

    default void reduce(Tensor tensor, int root, ReduceOp op) {
        reduce(tensor, root, op, CollectiveOptions.DEFAULT);
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
     * Fails this communicator and tells every peer, which then raise {@link PeerAbortedException} (ncclCommAbort).
     */
    void abort(String reason);

    /** Releases this rank's resources; later calls raise {@link CommunicatorAbortedException}. */
    @Override
    void close();
}
