package io.jccl;

import io.jccl.instrument.TrafficCounters;

/**
 * A group of ranks that run collectives together (torch's ProcessGroup, NCCL's ncclComm).
 *
 * <p>Every rank calls the same collectives in the same order with agreeing arguments; a rank whose call
 * disagrees, times out or fails makes every rank raise a {@link JcclException} that names the rank, the
 * operation, its sequence number and what went wrong, after which the communicator refuses further calls
 * ({@link CommunicatorAbortedException}). Arguments that are wrong locally raise {@link IllegalArgumentException}
 * before any data is sent. A collective call so refused still counts as that rank's call (a retry on that rank alone
 * is another call): where every rank refused it, the communicator goes on; where only some did, each rank that
 * waits in the call raises a {@link PeerAbortedException} naming the refusing rank and its reason as soon as it
 * looks (within about 0.1 s), not at its deadline, and the communicator fails on every rank.
 *
 * <p>Each collective has a synchronous form and an {@code ...Async} form returning a {@link Work}; all of a
 * communicator's collectives execute in call order. Tensors are modified in place where the operation has one
 * buffer ({@code allReduce}, {@code broadcast}, {@code reduce}); an asynchronous call owns its tensors until its
 * work completes. Calls may come from several threads: collectives run in the order their calls took their sequence
 * numbers, and sends (receives) with one peer in the order their calls took their numbers with that peer.
 */
public interface Communicator extends AutoCloseable {

    /**
     * This rank's number in this communicator (in a sub-group of {@link #split}, its rank in the sub-group).
     *
     * @return from 0 to {@link #size()} - 1
     */
    int rank();

    /**
     * The number of ranks in this communicator (the world size).
     *
     * @return at least 1
     */
    int size();

    /**
     * The transport's name: {@code local} for threads in one JVM.
     *
     * @return {@code local}, {@code shm}, {@code tcp}, or {@code shm+tcp} when ranks on this host use shared
     *         memory and the others TCP
     */
    String transportName();

    /**
     * Bytes and messages sent and received by this rank, per operation.
     *
     * @return this communicator's live counters (the same object on every call)
     */
    TrafficCounters counters();

    /**
     * The algorithm a call of {@code op} on {@code count} elements of {@code dtype} with default options would
     * run: the communicator's configured choice for {@code op}, else what AUTO's cost model picks ({@code count}
     * as the call's signature counts it: the input of allreduce, broadcast and allgather, the output of
     * reduce_scatter).
     *
     * @param op the operation
     * @param dtype the element type
     * @param count the number of elements, as above
     * @return the algorithm that would run, never {@link Algorithm#AUTO}
     */
    Algorithm algorithmFor(OpType op, DataType dtype, long count);

    /**
     * A zeroed tensor of {@code count} elements that this communicator's peers can read in place: on the shm
     * transport a direct buffer in this rank's registered region of shared memory ({@code JCCL_SHM_REGISTERED_BYTES},
     * handed out in order and kept until the transport closes), so that a shared-memory allreduce on it copies
     * nothing into or out of exchange buffers; over sockets (TCP, and TCP between hosts with shm within them) a
     * little-endian direct buffer, which the socket writes from and reads into with no copy in user space; with
     * threads a plain array (threads read arrays in place already). Use it for long-lived buffers such as gradient
     * buckets.
     *
     * @param dtype the element type
     * @param count the number of elements, 0 or more
     * @return a zeroed tensor of {@code count} elements
     * @throws IllegalArgumentException when the registered region has no room left
     */
    Tensor allocate(DataType dtype, int count);

    // ---- allReduce

    /**
     * Every rank ends with the element-wise reduction of every rank's {@code tensor}.
     *
     * @param tensor this rank's input, overwritten with the result; the same count and dtype on every rank
     * @param op the reduction, the same on every rank
     * @param options the algorithm and deadline of this call
     */
    void allReduce(Tensor tensor, ReduceOp op, CollectiveOptions options);

    /**
     * As {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)}, returning at once; the call runs after this
     * communicator's earlier calls, and {@code tensor} belongs to it until the work completes.
     *
     * @param tensor this rank's input, overwritten with the result
     * @param op the reduction
     * @param options the algorithm and deadline of this call
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    Work allReduceAsync(Tensor tensor, ReduceOp op, CollectiveOptions options);

    /**
     * {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensor this rank's input, overwritten with the result
     * @param op the reduction
     */
    default void allReduce(Tensor tensor, ReduceOp op) {
        allReduce(tensor, op, CollectiveOptions.DEFAULT);
    }

    /**
     * Allreduces the whole array in place ({@link DataType#FLOAT32}).
     *
     * @param data this rank's input, overwritten with the result
     * @param op the reduction
     */
    default void allReduce(float[] data, ReduceOp op) {
        allReduce(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /**
     * Allreduces the whole array in place ({@link DataType#FLOAT64}).
     *
     * @param data this rank's input, overwritten with the result
     * @param op the reduction
     */
    default void allReduce(double[] data, ReduceOp op) {
        allReduce(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allReduceAsync(Tensor, ReduceOp, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensor this rank's input, overwritten with the result
     * @param op the reduction
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work allReduceAsync(Tensor tensor, ReduceOp op) {
        return allReduceAsync(tensor, op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)} with {@link ReduceOp#SUM}, torch's default, and
     * {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensor this rank's input, overwritten with the sum
     */
    default void allReduce(Tensor tensor) {
        allReduce(tensor, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allReduceAsync(Tensor, ReduceOp, CollectiveOptions)} with {@link ReduceOp#SUM} and
     * {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensor this rank's input, overwritten with the sum
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work allReduceAsync(Tensor tensor) {
        return allReduceAsync(tensor, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    /**
     * Sums {@code data} over every rank, in place: {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)} of
     * the whole array ({@link DataType#FLOAT32}) with {@link ReduceOp#SUM} and {@link CollectiveOptions#DEFAULT}.
     *
     * @param data this rank's input, overwritten with the sum; the same length on every rank
     */
    default void allReduce(float[] data) {
        allReduce(Tensor.of(data));
    }

    /**
     * Sums {@code data} over every rank, in place: {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)} of
     * the whole array ({@link DataType#FLOAT64}) with {@link ReduceOp#SUM} and {@link CollectiveOptions#DEFAULT}.
     *
     * @param data this rank's input, overwritten with the sum; the same length on every rank
     */
    default void allReduce(double[] data) {
        allReduce(Tensor.of(data));
    }

    /**
     * Sums {@code data} over every rank, in place: {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)} of
     * the whole array ({@link DataType#INT32}) with {@link ReduceOp#SUM} and {@link CollectiveOptions#DEFAULT}.
     *
     * @param data this rank's input, overwritten with the sum; the same length on every rank
     */
    default void allReduce(int[] data) {
        allReduce(Tensor.of(data));
    }

    /**
     * Sums {@code data} over every rank, in place: {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)} of
     * the whole array ({@link DataType#INT64}) with {@link ReduceOp#SUM} and {@link CollectiveOptions#DEFAULT}.
     *
     * @param data this rank's input, overwritten with the sum; the same length on every rank
     */
    default void allReduce(long[] data) {
        allReduce(Tensor.of(data));
    }

    /**
     * Allreduces the whole array in place ({@link DataType#INT32}):
     * {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param data this rank's input, overwritten with the result
     * @param op the reduction
     */
    default void allReduce(int[] data, ReduceOp op) {
        allReduce(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /**
     * Allreduces the whole array in place ({@link DataType#INT64}):
     * {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param data this rank's input, overwritten with the result
     * @param op the reduction
     */
    default void allReduce(long[] data, ReduceOp op) {
        allReduce(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /**
     * Reduces {@code data}, elements of {@code dtype}, with {@code op} over every rank, in place:
     * {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param data this rank's input, overwritten with the result
     * @param dtype {@link DataType#INT8} or {@link DataType#UINT8}
     * @param op the reduction
     */
    default void allReduce(byte[] data, DataType dtype, ReduceOp op) {
        allReduce(Tensor.of(data, dtype), op, CollectiveOptions.DEFAULT);
    }

    /**
     * Reduces {@code data}, elements of {@code dtype}, with {@code op} over every rank, in place:
     * {@link #allReduce(Tensor, ReduceOp, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param data this rank's input as bit patterns, overwritten with the result
     * @param dtype {@link DataType#FLOAT16} or {@link DataType#BFLOAT16}
     * @param op the reduction
     */
    default void allReduce(short[] data, DataType dtype, ReduceOp op) {
        allReduce(Tensor.of(data, dtype), op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allReduce(float[], ReduceOp)}, asynchronously: {@link #allReduceAsync(Tensor, ReduceOp,
     * CollectiveOptions)} of the whole array ({@link DataType#FLOAT32}) with {@link CollectiveOptions#DEFAULT};
     * {@code data} is the call's until its work is done.
     *
     * @param data this rank's input, overwritten with the result
     * @param op the reduction
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work allReduceAsync(float[] data, ReduceOp op) {
        return allReduceAsync(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allReduce(double[], ReduceOp)}, asynchronously: {@link #allReduceAsync(Tensor, ReduceOp,
     * CollectiveOptions)} of the whole array ({@link DataType#FLOAT64}) with {@link CollectiveOptions#DEFAULT};
     * {@code data} is the call's until its work is done.
     *
     * @param data this rank's input, overwritten with the result
     * @param op the reduction
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work allReduceAsync(double[] data, ReduceOp op) {
        return allReduceAsync(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allReduce(int[], ReduceOp)}, asynchronously: {@link #allReduceAsync(Tensor, ReduceOp,
     * CollectiveOptions)} of the whole array ({@link DataType#INT32}) with {@link CollectiveOptions#DEFAULT};
     * {@code data} is the call's until its work is done.
     *
     * @param data this rank's input, overwritten with the result
     * @param op the reduction
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work allReduceAsync(int[] data, ReduceOp op) {
        return allReduceAsync(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allReduce(long[], ReduceOp)}, asynchronously: {@link #allReduceAsync(Tensor, ReduceOp,
     * CollectiveOptions)} of the whole array ({@link DataType#INT64}) with {@link CollectiveOptions#DEFAULT};
     * {@code data} is the call's until its work is done.
     *
     * @param data this rank's input, overwritten with the result
     * @param op the reduction
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work allReduceAsync(long[] data, ReduceOp op) {
        return allReduceAsync(Tensor.of(data), op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allReduce(byte[], DataType, ReduceOp)}, asynchronously: {@link #allReduceAsync(Tensor,
     * ReduceOp, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}; {@code data} is the call's until
     * its work is done.
     *
     * @param data this rank's input, overwritten with the result
     * @param dtype {@link DataType#INT8} or {@link DataType#UINT8}
     * @param op the reduction
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work allReduceAsync(byte[] data, DataType dtype, ReduceOp op) {
        return allReduceAsync(Tensor.of(data, dtype), op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allReduce(short[], DataType, ReduceOp)}, asynchronously: {@link #allReduceAsync(Tensor,
     * ReduceOp, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}; {@code data} is the call's until
     * its work is done.
     *
     * @param data this rank's input as bit patterns, overwritten with the result
     * @param dtype {@link DataType#FLOAT16} or {@link DataType#BFLOAT16}
     * @param op the reduction
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work allReduceAsync(short[] data, DataType dtype, ReduceOp op) {
        return allReduceAsync(Tensor.of(data, dtype), op, CollectiveOptions.DEFAULT);
    }

    /**
     * Allreduces many tensors of one dtype as one operation (the bucketing primitive): they are packed into one
     * buffer, reduced with one allreduce, and unpacked. The result of each element equals that of an allreduce
     * of the concatenation.
     *
     * @param tensors this rank's inputs, each overwritten with its result; the same counts on every rank
     * @param op the reduction
     * @param options the algorithm and deadline of this call
     */
    void allReduceCoalesced(java.util.List<Tensor> tensors, ReduceOp op, CollectiveOptions options);

    /**
     * As {@link #allReduceCoalesced(java.util.List, ReduceOp, CollectiveOptions)}, returning at once; the tensors
     * belong to the call until the work completes. The list does not: the call reduces the tensors it held when
     * called, and the caller may clear or refill it once this returns.
     *
     * @param tensors this rank's inputs, each overwritten with its result
     * @param op the reduction
     * @param options the algorithm and deadline of this call
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    Work allReduceCoalescedAsync(java.util.List<Tensor> tensors, ReduceOp op, CollectiveOptions options);

    /**
     * {@link #allReduceCoalesced(java.util.List, ReduceOp, CollectiveOptions)} with
     * {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensors this rank's inputs, each overwritten with its result
     * @param op the reduction
     */
    default void allReduceCoalesced(java.util.List<Tensor> tensors, ReduceOp op) {
        allReduceCoalesced(tensors, op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allReduceCoalesced(java.util.List, ReduceOp, CollectiveOptions)} with {@link ReduceOp#SUM} and
     * {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensors this rank's inputs, each overwritten with its sum; the same counts on every rank
     */
    default void allReduceCoalesced(java.util.List<Tensor> tensors) {
        allReduceCoalesced(tensors, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    // ---- broadcast

    /**
     * Every rank ends with {@code root}'s {@code tensor}.
     *
     * @param tensor the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent, the same on every rank
     * @param options the algorithm and deadline of this call
     */
    void broadcast(Tensor tensor, int root, CollectiveOptions options);

    /**
     * As {@link #broadcast(Tensor, int, CollectiveOptions)}, returning at once; {@code tensor} belongs to the
     * call until the work completes.
     *
     * @param tensor the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     * @param options the algorithm and deadline of this call
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    Work broadcastAsync(Tensor tensor, int root, CollectiveOptions options);

    /**
     * {@link #broadcast(Tensor, int, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensor the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     */
    default void broadcast(Tensor tensor, int root) {
        broadcast(tensor, root, CollectiveOptions.DEFAULT);
    }

    /**
     * Broadcasts the whole array ({@link DataType#FLOAT32}).
     *
     * @param data the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     */
    default void broadcast(float[] data, int root) {
        broadcast(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /**
     * Broadcasts the whole array ({@link DataType#FLOAT64}): {@link #broadcast(Tensor, int, CollectiveOptions)}
     * with {@link CollectiveOptions#DEFAULT}.
     *
     * @param data the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     */
    default void broadcast(double[] data, int root) {
        broadcast(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /**
     * Broadcasts the whole array ({@link DataType#INT32}): {@link #broadcast(Tensor, int, CollectiveOptions)}
     * with {@link CollectiveOptions#DEFAULT}.
     *
     * @param data the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     */
    default void broadcast(int[] data, int root) {
        broadcast(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /**
     * Broadcasts the whole array ({@link DataType#INT64}): {@link #broadcast(Tensor, int, CollectiveOptions)}
     * with {@link CollectiveOptions#DEFAULT}.
     *
     * @param data the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     */
    default void broadcast(long[] data, int root) {
        broadcast(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /**
     * Every rank ends with {@code root}'s {@code data}, elements of {@code dtype}:
     * {@link #broadcast(Tensor, int, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param data the root's data; on the other ranks, overwritten with it
     * @param dtype {@link DataType#INT8} or {@link DataType#UINT8}
     * @param root the rank whose data is sent
     */
    default void broadcast(byte[] data, DataType dtype, int root) {
        broadcast(Tensor.of(data, dtype), root, CollectiveOptions.DEFAULT);
    }

    /**
     * Every rank ends with {@code root}'s {@code data}, elements of {@code dtype}:
     * {@link #broadcast(Tensor, int, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param data the root's data; on the other ranks, overwritten with it
     * @param dtype {@link DataType#FLOAT16} or {@link DataType#BFLOAT16}
     * @param root the rank whose data is sent
     */
    default void broadcast(short[] data, DataType dtype, int root) {
        broadcast(Tensor.of(data, dtype), root, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #broadcast(float[], int)}, asynchronously: {@link #broadcastAsync(Tensor, int, CollectiveOptions)}
     * of the whole array ({@link DataType#FLOAT32}) with {@link CollectiveOptions#DEFAULT}; {@code data} is the
     * call's until its work is done.
     *
     * @param data the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work broadcastAsync(float[] data, int root) {
        return broadcastAsync(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #broadcast(double[], int)}, asynchronously: {@link #broadcastAsync(Tensor, int, CollectiveOptions)}
     * of the whole array ({@link DataType#FLOAT64}) with {@link CollectiveOptions#DEFAULT}; {@code data} is the
     * call's until its work is done.
     *
     * @param data the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work broadcastAsync(double[] data, int root) {
        return broadcastAsync(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #broadcast(int[], int)}, asynchronously: {@link #broadcastAsync(Tensor, int, CollectiveOptions)}
     * of the whole array ({@link DataType#INT32}) with {@link CollectiveOptions#DEFAULT}; {@code data} is the
     * call's until its work is done.
     *
     * @param data the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work broadcastAsync(int[] data, int root) {
        return broadcastAsync(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #broadcast(long[], int)}, asynchronously: {@link #broadcastAsync(Tensor, int, CollectiveOptions)}
     * of the whole array ({@link DataType#INT64}) with {@link CollectiveOptions#DEFAULT}; {@code data} is the
     * call's until its work is done.
     *
     * @param data the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work broadcastAsync(long[] data, int root) {
        return broadcastAsync(Tensor.of(data), root, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #broadcastAsync(Tensor, int, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensor the root's data; on the other ranks, overwritten with it
     * @param root the rank whose data is sent
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work broadcastAsync(Tensor tensor, int root) {
        return broadcastAsync(tensor, root, CollectiveOptions.DEFAULT);
    }

    // ---- allGather

    /**
     * {@code output} (size x input elements) receives rank i's {@code input} in block i, on every rank.
     *
     * @param input this rank's block
     * @param output {@link #size()} times as many elements of the same dtype, overwritten with every block
     * @param options the algorithm and deadline of this call
     */
    void allGather(Tensor input, Tensor output, CollectiveOptions options);

    /**
     * As {@link #allGather(Tensor, Tensor, CollectiveOptions)}, returning at once; the tensors belong to the call
     * until the work completes.
     *
     * @param input this rank's block
     * @param output {@link #size()} times as many elements, overwritten with every block
     * @param options the algorithm and deadline of this call
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    Work allGatherAsync(Tensor input, Tensor output, CollectiveOptions options);

    /**
     * {@link #allGather(Tensor, Tensor, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param input this rank's block
     * @param output {@link #size()} times as many elements, overwritten with every block
     */
    default void allGather(Tensor input, Tensor output) {
        allGather(input, output, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #allGatherAsync(Tensor, Tensor, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param input this rank's block
     * @param output {@link #size()} times as many elements, overwritten with every block
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work allGatherAsync(Tensor input, Tensor output) {
        return allGatherAsync(input, output, CollectiveOptions.DEFAULT);
    }

    /**
     * Every rank's {@code data}, whatever its length, in rank order, on every rank (XGBoost's AllgatherV): entry
     * i is a copy of rank i's array. Two calls: an allgather of the lengths, then a ring that moves each array
     * once around (every rank receives the others' bytes once, no padding). Bytes, not objects: serialize with
     * whatever the program already uses; no Java serialization happens on the wire.
     *
     * @param data this rank's bytes, of any length (0 too); not modified
     * @return {@link #size()} arrays, entry i a copy of rank i's {@code data} (this rank's included)
     * @throws IllegalArgumentException on every rank, naming the rank, when a rank's {@code data} is null (checked
     *         after the allgather of the lengths, which carries it; the communicator stays usable)
     */
    byte[][] allGatherV(byte[] data);

    /**
     * Every rank's {@code data}, whatever its length, in rank order, on {@code root} (entry i: rank i's bytes);
     * null on the other ranks. Two calls: an allgather of the lengths, then every rank sends its bytes to the root.
     *
     * @param data this rank's bytes, of any length (0 too); not modified
     * @param root the rank that receives every rank's bytes, the same on every rank
     * @return on the root, {@link #size()} arrays, entry i a copy of rank i's {@code data}; null on the other ranks
     * @throws IllegalArgumentException on every rank, naming the rank, when a rank's {@code data} is null or its
     *         {@code root} is out of range or differs from rank 0's (checked after the allgather of the lengths,
     *         which carries the roots too; the communicator stays usable)
     */
    byte[][] gatherV(byte[] data, int root);

    // ---- reduceScatter

    /**
     * Reduces every rank's {@code input} (size x output elements) element-wise; rank i receives block i of the
     * result in {@code output}. Bit-identical to the same block of {@link #allReduce} on the same inputs.
     *
     * @param input this rank's data, {@link #size()} blocks of {@code output}'s count; not modified
     * @param output overwritten with this rank's block of the reduction
     * @param op the reduction
     * @param options the algorithm and deadline of this call
     */
    void reduceScatter(Tensor input, Tensor output, ReduceOp op, CollectiveOptions options);

    /**
     * As {@link #reduceScatter(Tensor, Tensor, ReduceOp, CollectiveOptions)}, returning at once; the tensors
     * belong to the call until the work completes.
     *
     * @param input this rank's data, {@link #size()} blocks of {@code output}'s count
     * @param output overwritten with this rank's block of the reduction
     * @param op the reduction
     * @param options the algorithm and deadline of this call
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    Work reduceScatterAsync(Tensor input, Tensor output, ReduceOp op, CollectiveOptions options);

    /**
     * {@link #reduceScatter(Tensor, Tensor, ReduceOp, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param input this rank's data, {@link #size()} blocks of {@code output}'s count
     * @param output overwritten with this rank's block of the reduction
     * @param op the reduction
     */
    default void reduceScatter(Tensor input, Tensor output, ReduceOp op) {
        reduceScatter(input, output, op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #reduceScatterAsync(Tensor, Tensor, ReduceOp, CollectiveOptions)} with
     * {@link CollectiveOptions#DEFAULT}.
     *
     * @param input this rank's data, {@link #size()} blocks of {@code output}'s count
     * @param output overwritten with this rank's block of the reduction
     * @param op the reduction
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work reduceScatterAsync(Tensor input, Tensor output, ReduceOp op) {
        return reduceScatterAsync(input, output, op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #reduceScatter(Tensor, Tensor, ReduceOp, CollectiveOptions)} with {@link ReduceOp#SUM} and
     * {@link CollectiveOptions#DEFAULT}.
     *
     * @param input this rank's data, {@link #size()} blocks of {@code output}'s count; not modified
     * @param output overwritten with this rank's block of the sum
     */
    default void reduceScatter(Tensor input, Tensor output) {
        reduceScatter(input, output, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #reduceScatterAsync(Tensor, Tensor, ReduceOp, CollectiveOptions)} with {@link ReduceOp#SUM} and
     * {@link CollectiveOptions#DEFAULT}.
     *
     * @param input this rank's data, {@link #size()} blocks of {@code output}'s count; not modified
     * @param output overwritten with this rank's block of the sum
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    default Work reduceScatterAsync(Tensor input, Tensor output) {
        return reduceScatterAsync(input, output, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    // ---- reduce

    /**
     * {@code root}'s {@code tensor} receives the reduction of every rank's; other ranks' tensors are unchanged.
     *
     * @param tensor this rank's input; on the root, overwritten with the result
     * @param root the rank that receives the result, the same on every rank
     * @param op the reduction
     * @param options the algorithm and deadline of this call
     */
    void reduce(Tensor tensor, int root, ReduceOp op, CollectiveOptions options);

    /**
     * As {@link #reduce(Tensor, int, ReduceOp, CollectiveOptions)}, returning at once; {@code tensor} belongs to
     * the call until the work completes.
     *
     * @param tensor this rank's input; on the root, overwritten with the result
     * @param root the rank that receives the result
     * @param op the reduction
     * @param options the algorithm and deadline of this call
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    Work reduceAsync(Tensor tensor, int root, ReduceOp op, CollectiveOptions options);

    /**
     * {@link #reduce(Tensor, int, ReduceOp, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensor this rank's input; on the root, overwritten with the result
     * @param root the rank that receives the result
     * @param op the reduction
     */
    default void reduce(Tensor tensor, int root, ReduceOp op) {
        reduce(tensor, root, op, CollectiveOptions.DEFAULT);
    }

    /**
     * {@link #reduce(Tensor, int, ReduceOp, CollectiveOptions)} with {@link ReduceOp#SUM} and
     * {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensor this rank's input; on the root, overwritten with the sum
     * @param root the rank that receives the result
     */
    default void reduce(Tensor tensor, int root) {
        reduce(tensor, root, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    // ---- gather

    /**
     * {@code root}'s {@code output} (size x input elements) receives rank i's input in block i; null elsewhere.
     *
     * @param input this rank's block
     * @param output on the root, {@link #size()} times as many elements, overwritten with every block; null on
     *        the other ranks
     * @param root the rank that receives the blocks, the same on every rank
     * @param options the algorithm and deadline of this call
     */
    void gather(Tensor input, Tensor output, int root, CollectiveOptions options);

    /**
     * As {@link #gather(Tensor, Tensor, int, CollectiveOptions)}, returning at once; the tensors belong to the
     * call until the work completes.
     *
     * @param input this rank's block
     * @param output on the root, {@link #size()} times as many elements; null on the other ranks
     * @param root the rank that receives the blocks
     * @param options the algorithm and deadline of this call
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    Work gatherAsync(Tensor input, Tensor output, int root, CollectiveOptions options);

    /**
     * {@link #gather(Tensor, Tensor, int, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param input this rank's block
     * @param output on the root, {@link #size()} times as many elements; null on the other ranks
     * @param root the rank that receives the blocks
     */
    default void gather(Tensor input, Tensor output, int root) {
        gather(input, output, root, CollectiveOptions.DEFAULT);
    }

    // ---- scatter

    /**
     * Rank i's {@code output} receives block i of {@code root}'s {@code input} (null on other ranks).
     *
     * @param input on the root, {@link #size()} blocks of {@code output}'s count; null on the other ranks
     * @param output overwritten with this rank's block
     * @param root the rank whose blocks are sent, the same on every rank
     * @param options the algorithm and deadline of this call
     */
    void scatter(Tensor input, Tensor output, int root, CollectiveOptions options);

    /**
     * As {@link #scatter(Tensor, Tensor, int, CollectiveOptions)}, returning at once; the tensors belong to the
     * call until the work completes.
     *
     * @param input on the root, {@link #size()} blocks of {@code output}'s count; null on the other ranks
     * @param output overwritten with this rank's block
     * @param root the rank whose blocks are sent
     * @param options the algorithm and deadline of this call
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    Work scatterAsync(Tensor input, Tensor output, int root, CollectiveOptions options);

    /**
     * {@link #scatter(Tensor, Tensor, int, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param input on the root, {@link #size()} blocks of {@code output}'s count; null on the other ranks
     * @param output overwritten with this rank's block
     * @param root the rank whose blocks are sent
     */
    default void scatter(Tensor input, Tensor output, int root) {
        scatter(input, output, root, CollectiveOptions.DEFAULT);
    }

    // ---- allToAll

    /**
     * Block j of rank i's {@code input} becomes block i of rank j's {@code output}; both hold size equal blocks.
     *
     * @param input this rank's {@link #size()} blocks, block j for rank j
     * @param output as many elements, overwritten: block i from rank i
     * @param options the algorithm and deadline of this call
     */
    void allToAll(Tensor input, Tensor output, CollectiveOptions options);

    /**
     * As {@link #allToAll(Tensor, Tensor, CollectiveOptions)}, returning at once; the tensors belong to the call
     * until the work completes.
     *
     * @param input this rank's {@link #size()} blocks, block j for rank j
     * @param output as many elements, overwritten: block i from rank i
     * @param options the algorithm and deadline of this call
     * @return the work, complete when the call has run on this rank (its {@link Work#await()} rethrows a failure)
     */
    Work allToAllAsync(Tensor input, Tensor output, CollectiveOptions options);

    /**
     * {@link #allToAll(Tensor, Tensor, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param input this rank's {@link #size()} blocks, block j for rank j
     * @param output as many elements, overwritten: block i from rank i
     */
    default void allToAll(Tensor input, Tensor output) {
        allToAll(input, output, CollectiveOptions.DEFAULT);
    }

    // ---- barrier

    /**
     * Returns once every rank has entered the barrier.
     *
     * @param options the algorithm and deadline of this call
     */
    void barrier(CollectiveOptions options);

    /**
     * As {@link #barrier(CollectiveOptions)}, returning at once.
     *
     * @param options the algorithm and deadline of this call
     * @return the work, complete once every rank has entered the barrier
     */
    Work barrierAsync(CollectiveOptions options);

    /** {@link #barrier(CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}. */
    default void barrier() {
        barrier(CollectiveOptions.DEFAULT);
    }

    /**
     * A barrier with its own timeout that names every rank that did not arrive (torch's {@code monitored_barrier}):
     * each rank reports to rank 0, which waits for all of them until {@code timeout}, then releases them, or fails
     * listing every rank missing; the others fail with rank 0's message. Slower than {@link #barrier()} (rank 0
     * hears from every rank): a debugging aid, as in torch.
     *
     * @param timeout this call's deadline on every rank, in place of the communicator's: how long rank 0 waits for
     *        the others to arrive, and they for its release; positive
     * @throws IllegalArgumentException when {@code timeout} is null, zero or negative
     * @throws CollectiveTimeoutException on rank 0 when a rank has not arrived in time, naming every one missing
     */
    void monitoredBarrier(java.time.Duration timeout);

    // ---- point to point

    /**
     * Sends {@code tensor} to {@code dst}; returns once it is handed to the transport. Matched, in order, with the
     * {@link #recv} on {@code dst} of the same tag, count and dtype; a disagreement fails the receiver.
     *
     * @param tensor the data to send
     * @param dst the receiving rank, not this one
     * @param tag the receiver's {@code recv} must pass the same tag
     */
    void send(Tensor tensor, int dst, int tag);

    /**
     * Receives into {@code tensor} the next message {@code src} sent to this rank.
     *
     * @param tensor overwritten with the message; the count and dtype {@code src} sent
     * @param src the sending rank, not this one
     * @param tag the tag {@code src} passed to {@code send}
     * @param options the deadline of this receive (its algorithm is ignored)
     */
    void recv(Tensor tensor, int src, int tag, CollectiveOptions options);

    /**
     * {@link #recv(Tensor, int, int, CollectiveOptions)} with {@link CollectiveOptions#DEFAULT}.
     *
     * @param tensor overwritten with the message
     * @param src the sending rank
     * @param tag the tag {@code src} passed to {@code send}
     */
    default void recv(Tensor tensor, int src, int tag) {
        recv(tensor, src, tag, CollectiveOptions.DEFAULT);
    }

    /**
     * Sends {@code tensor} to {@code dst} without waiting (torch's {@code isend}); the tensor is the call's until
     * the returned work completes. Sends of this rank to one peer leave in the order called, synchronous or not.
     *
     * @param tensor the data to send
     * @param dst the receiving rank, not this one
     * @param tag the receiver's {@code recv} or {@code irecv} must pass the same tag
     * @return the work, complete once the tensor is handed to the transport (its {@link Work#await()} rethrows a
     *         failure)
     */
    Work isend(Tensor tensor, int dst, int tag);

    /**
     * Receives into {@code tensor} the next message from {@code src} without waiting (torch's {@code irecv}); the
     * tensor holds it once the returned work completes. Receives from one peer are matched in the order called.
     *
     * @param tensor overwritten with the message; the count and dtype {@code src} sent
     * @param src the sending rank, not this one
     * @param tag the tag {@code src} passed to {@code send} or {@code isend}
     * @return the work, complete once the message is in {@code tensor}; its {@link Work#await()} rethrows a
     *         failure, such as a timeout after the communicator's timeout
     */
    Work irecv(Tensor tensor, int src, int tag);

    /**
     * Starts every operation of {@code ops} ({@link P2POp#isend}, {@link P2POp#irecv}) in list order and returns
     * their works in that order (torch's {@code batch_isend_irecv}). Operations with different peers, or in different
     * directions, run side by side, so a batch completes whatever order its operations, or its peers' operations,
     * are listed in. Every operation is checked before any starts: a bad one starts none.
     *
     * @param ops the sends and receives to start, none null
     * @return one work per operation, in the order of {@code ops}
     */
    default java.util.List<Work> batchIsendIrecv(java.util.List<P2POp> ops) {
        java.util.Objects.requireNonNull(ops, "ops");
        for (P2POp op : ops) { // all before any starts: a started one would take its peer's message unseen
            if (op == null) {
                throw new IllegalArgumentException("batchIsendIrecv: ops contains null");
            }
            if (op.tensor() == null || op.peer() < 0 || op.peer() >= size() || op.peer() == rank()) {
                throw new IllegalArgumentException("batchIsendIrecv: " + (op.isSend() ? "isend to " : "irecv from ")
                        + op.peer() + (op.tensor() == null ? " has no tensor" : ": the peer must be another rank in [0, "
                        + size() + "), on rank " + rank()) + "; nothing of the batch was started");
            }
        }
        java.util.List<Work> works = new java.util.ArrayList<>(ops.size());
        for (P2POp op : ops) {
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
     *
     * @param color the group to join, 0 or more, or {@link #UNDEFINED} to join none
     * @param key orders the ranks within the new group
     * @return this rank's sub-communicator, or null for {@link #UNDEFINED}
     */
    Communicator split(int color, int key);

    /**
     * A communicator of the ranks {@code ranks} of this one (torch's {@code new_group}), ranked in increasing order
     * of their rank here; null on the ranks not in it. Its calls name ranks as the group numbers them (a root, a
     * peer: 0 is its lowest member), as NCCL's and MPI's communicators do; torch's collectives on a group take global
     * ranks instead. A collective call: every rank of this communicator calls it
     * with the same ranks, in any order (a rank whose list differs makes every rank fail, naming it). Built on
     * {@link #split}: it shares this one's links; close it before this one.
     *
     * @param ranks the ranks of this communicator that form the group, at least one, each once, in any order
     * @return this rank's communicator of the group, or null when this rank is not in {@code ranks}
     * @throws IllegalArgumentException when {@code ranks} is empty, lists a rank twice or one not of this
     *         communicator (on every rank alike: the ranks' lists are gathered first, so that a bad one fails them
     *         all, naming the rank that gave it)
     */
    Communicator newGroup(int... ranks);

    /**
     * {@return this rank's flight record as JSON} Its last calls (2,000 by default,
     * {@code JCCL_FLIGHT_RECORDER_ENTRIES}) on this communicator, the one it was split from and their sub-groups,
     * each with its state, timestamps and, for a call still waiting, the step and the rank (of that call's
     * communicator) it waits for. See docs/diagnostics.md.
     */
    String flightRecorderJson();

    /**
     * Writes this rank's flight record into {@code JCCL_FLIGHT_RECORDER_DIR} as {@code jccl_fr_rank<r>.json} and
     * returns the file ({@code jccl analyze DIR} reads every rank's); each rank also writes it on its first failure.
     *
     * @return the file written, or null when it could not be written (the reason is logged as a warning)
     * @throws IllegalStateException when {@code JCCL_FLIGHT_RECORDER_DIR} is not set
     */
    java.nio.file.Path dumpFlightRecorder();

    /**
     * Fails this communicator and tells every peer, which then raise {@link PeerAbortedException} (ncclCommAbort).
     *
     * @param reason the message the peers' exceptions carry
     */
    void abort(String reason);

    /**
     * Releases this rank's resources; later calls raise {@link CommunicatorAbortedException}. A close while another
     * thread's close runs returns when that one has ended (its peers told), so a program may exit after it.
     */
    @Override
    void close();
}
