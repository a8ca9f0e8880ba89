package io.jccl.train;

import io.jccl.Communicator;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import io.jccl.Work;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Data-parallel gradient synchronisation (PyTorch DDP): gradients are grouped into buckets of at most
 * {@code bucketBytes} (25 MB by default), filled in reverse registration order, since backward produces the last
 * layers' gradients first. {@link #markReady} is the bucket-ready hook: when every gradient of a bucket is ready,
 * the bucket's allreduce starts asynchronously while backward goes on; buckets start in index order on every rank.
 * {@link #finish} waits for every bucket and writes the averaged gradients back.
 *
 * <p>A parameter larger than the cap gets a bucket of its own; small ones ride with their neighbours. With overlap
 * off every bucket is reduced in {@link #finish}. One instance serves every step. Buckets come from
 * {@link Communicator#allocate}: over shared memory they live in the registered region and the shared-memory
 * allreduce reads them in place, without copying them into exchange buffers; a bucket the region has no room left
 * for (a large model, a second instance on one communicator, {@code JCCL_SHM_REGISTERED_BYTES=0}) is a plain array.
 *
 * <p>The gradients are averaged over the ranks (AVG), as PyTorch DDP does: when each rank's gradient is that of
 * its mean loss, the average is the global batch's gradient only if every rank has the same number of rows. With
 * uneven rows, make each rank's gradient that of its part of the global batch's mean loss (its rows' losses over
 * the global row count, as {@link Mlp#mse} does given {@code totalRows}) times the world size.
 *
 * <p>Every parameter must be marked ready once in every step before {@link #finish}. A rank whose
 * {@link #finish} finds a parameter not marked ready (PyTorch DDP's unused-parameter error) aborts its
 * communicator, naming itself and the parameters, so that the peers waiting in the step's allreduces fail with
 * {@link io.jccl.PeerAbortedException} at once instead of at the timeout; the instance is then of no further use.
 *
 * <p>An instance is not thread-safe: {@link #markReady} and {@link #finish} must be called from one thread at a
 * time (the thread running backward), as the communicator's calls must.
 */
public final class DistributedDataParallel {
    /** PyTorch DDP's default bucket cap. */
    public static final long DEFAULT_BUCKET_BYTES = 25L * 1024 * 1024;
    private static final String WHAT = "DistributedDataParallel";

    /** A gradient to synchronise: {@code length} floats of {@code grad} from {@code offset}. */
    public static final class Parameter {
        final String name;
        final float[] grad;
        final int offset;
        final int length;

        /**
         * @param name the parameter's name, for error messages
         * @param grad the array holding the gradient
         * @param offset the gradient's first element in {@code grad}
         * @param length the gradient's element count
         * @throws IllegalArgumentException when {@code offset} and {@code length} do not fit in {@code grad}
         *         (checked here, before any collective, rather than mid-step)
         */
        public Parameter(String name, float[] grad, int offset, int length) {
            java.util.Objects.requireNonNull(name, "name");
            java.util.Objects.requireNonNull(grad, "grad of parameter " + name);
            if (offset < 0 || length < 0 || offset > grad.length - length) {
                throw new IllegalArgumentException("parameter " + name + ": offset " + offset + " and length "
                        + length + " do not fit in its gradient array of " + grad.length + " floats");
            }
            this.name = name;
            this.grad = grad;
            this.offset = offset;
            this.length = length;
        }
    }

    private static final class Bucket {
        final List<Integer> params = new ArrayList<>();
        final List<Integer> positions = new ArrayList<>();
        /** From {@link Communicator#allocate}: in shared memory on shm, so the allreduce reads it in place. */
        Tensor tensor;
        /** Whether {@link #tensor} came from {@link Communicator#allocate} (else the region had no room). */
        boolean allocated;
        /** The tensor's elements: a float view of its buffer, or its array. */
        java.nio.FloatBuffer shared;
        float[] array;
        int pending;
        boolean ready;
        Work work;
        long reductions;
    }

    private final Communicator comm;
    private final List<Parameter> params;
    private final boolean overlap;
    private final List<Bucket> buckets = new ArrayList<>();
    private final int[] bucketOf;
    private final int[] positionOf;
    private final boolean[] marked;
    private int nextLaunch;

    /**
     * @param comm the ranks sharing the model
     * @param params the gradients to average, in the order the backward pass produces them last to first
     * @param bucketBytes the most bytes of gradients in one allreduce (a larger parameter has a bucket of its own)
     * @param overlap launch each bucket's allreduce once all its parameters are {@link #markReady marked}, rather
     *        than all of them in {@link #finish}
     * @throws IllegalArgumentException on every rank, when a rank's {@code params} is or holds null or its
     *         {@code bucketBytes} is not positive, or the ranks' parameters (their count and lengths) or buckets
     *         differ, as torch's DDP verifies its parameters' shapes across processes (exchanges before any step; the
     *         communicator stays usable)
     */
    public DistributedDataParallel(Communicator comm, List<Parameter> params, long bucketBytes, boolean overlap) {
        String problem = params == null || params.stream().anyMatch(java.util.Objects::isNull)
                ? "a null parameter list or parameter" : bucketBytes <= 0 ? "bucketBytes must be positive: "
                + "bucketBytes=" + bucketBytes : null;
        if (problem != null) {
            Agreement.check(comm, WHAT, problem, List.of()); // throws on every rank
        }
        this.comm = comm;
        this.params = List.copyOf(params);
        this.overlap = overlap;
        this.bucketOf = new int[params.size()];
        this.positionOf = new int[params.size()];
        this.marked = new boolean[params.size()];
        Bucket b = null;
        long filled = 0;
        for (int i = params.size() - 1; i >= 0; i--) {
            long bytes = 4L * params.get(i).length;
            if (b == null || (filled > 0 && filled + bytes > bucketBytes)) {
                b = new Bucket();
                buckets.add(b);
                filled = 0;
            }
            bucketOf[i] = buckets.size() - 1;
            positionOf[i] = (int) (filled / 4);
            b.params.add(i);
            b.positions.add(positionOf[i]);
            filled += bytes;
        }
        List<String> facts = new ArrayList<>();
        facts.add("parameters=" + params.size());
        for (int i = 0; i < params.size(); i++) {
            facts.add("parameter " + i + " of " + params.get(i).length + " elements");
        }
        List<Integer> layout = new ArrayList<>();
        for (Bucket k : buckets) {
            layout.add(k.params.size());
        }
        facts.add("buckets of " + layout + " parameters");
        Agreement.check(comm, WHAT, null, facts);
        for (Bucket k : buckets) {
            int n = 0;
            for (int i : k.params) {
                n += params.get(i).length;
            }
            try {
                k.tensor = comm.allocate(io.jccl.DataType.FLOAT32, n);
                k.allocated = true;
            } catch (IllegalArgumentException full) {
                // the shared-memory registered region (JCCL_SHM_REGISTERED_BYTES, never freed before the transport
                // closes) has no room left: a plain array serves, copied through the exchange buffers; peers whose
                // bucket did fit run the same sums (a call may mix the two)
                k.tensor = Tensor.of(new float[n]);
            }
            if (k.tensor.isBuffer()) {
                k.shared = k.tensor.byteBuffer().asFloatBuffer();
            } else {
                k.array = (float[]) k.tensor.array(); // an array tensor from allocate() starts at 0
            }
        }
        resetStep();
    }

    private void resetStep() {
        for (Bucket k : buckets) {
            k.pending = k.params.size();
            k.ready = false;
            k.work = null;
        }
        Arrays.fill(marked, false);
        nextLaunch = 0;
    }

    public int bucketCount() {
        return buckets.size();
    }

    /** How many buckets live in memory from {@link Communicator#allocate} (the others are arrays). */
    public int allocatedBuckets() {
        int n = 0;
        for (Bucket k : buckets) {
            n += k.allocated ? 1 : 0;
        }
        return n;
    }

    /** Indices of the parameters in bucket {@code b}, in filling order. */
    public List<Integer> bucketParams(int b) {
        return List.copyOf(buckets.get(b).params);
    }

    /** How many times each bucket has been reduced since construction. */
    public long[] reductionsPerBucket() {
        return buckets.stream().mapToLong(k -> k.reductions).toArray();
    }

    /**
     * The bucket-ready hook: parameter {@code index}'s gradient is final for this step. Not thread-safe: call it
     * from one thread at a time, the one that calls {@link #finish}.
     *
     * @throws IndexOutOfBoundsException when {@code index} is no parameter's
     * @throws IllegalStateException when the parameter was already marked ready in this step
     *         (either way the communicator is aborted, so that the peers, which may already wait in this step's
     *         bucket allreduces, fail at once with the reason)
     */
    public void markReady(int index) {
        if (index < 0 || index >= params.size()) {
            throw new IndexOutOfBoundsException(Refusal.abort(comm, "markReady(" + index + ") of " + params.size()
                    + " parameters"));
        }
        if (marked[index]) {
            throw new IllegalStateException(Refusal.abort(comm, "parameter " + params.get(index).name
                    + " marked ready twice in one step"));
        }
        marked[index] = true;
        Parameter p = params.get(index);
        Bucket k = buckets.get(bucketOf[index]);
        if (k.shared != null) {
            k.shared.put(positionOf[index], p.grad, p.offset, p.length);
        } else {
            System.arraycopy(p.grad, p.offset, k.array, positionOf[index], p.length);
        }
        if (--k.pending == 0) {
            k.ready = true;
            if (overlap) {
                launchReady();
            }
        }
    }

    private void launchReady() {
        while (nextLaunch < buckets.size() && buckets.get(nextLaunch).ready) {
            Bucket k = buckets.get(nextLaunch++);
            k.work = comm.allReduceAsync(k.tensor, ReduceOp.AVG);
            k.reductions++;
        }
    }

    /**
     * Waits for every bucket, writes the averaged gradients back, and readies the next step.
     *
     * @throws IllegalStateException when a parameter was not marked ready in this step: the communicator is then
     *         aborted first, with a reason naming this rank and those parameters, since its peers may already wait
     *         in this step's allreduces (some buckets' may have started), and the step is reset
     */
    public void finish() {
        List<String> missing = new ArrayList<>();
        for (int i = 0; i < marked.length; i++) {
            if (!marked[i]) {
                missing.add(params.get(i).name);
            }
        }
        if (!missing.isEmpty()) {
            resetStep();
            throw new IllegalStateException(Refusal.abort(comm, "DistributedDataParallel.finish() before every"
                    + " gradient was marked ready, not marked: " + missing) + " (the communicator is aborted)");
        }
        if (!overlap) {
            for (Bucket k : buckets) {
                comm.allReduce(k.tensor, ReduceOp.AVG);
                k.reductions++;
            }
        }
        for (Bucket k : buckets) {
            if (k.work != null) {
                k.work.await();
            }
        }
        for (int i = 0; i < params.size(); i++) {
            Parameter p = params.get(i);
            Bucket k = buckets.get(bucketOf[i]);
            if (k.shared != null) {
                k.shared.get(positionOf[i], p.grad, p.offset, p.length);
            } else {
                System.arraycopy(k.array, positionOf[i], p.grad, p.offset, p.length);
            }
        }
        resetStep();
    }
}
