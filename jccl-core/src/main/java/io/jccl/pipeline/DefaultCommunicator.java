package io.jccl.pipeline;

import io.jccl.buffer.Buf;
import io.jccl.step.Signature;

import io.jccl.step.CollectiveCall;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.Communicator;
import io.jccl.CommunicatorAbortedException;
import io.jccl.CommunicatorConfig;
import io.jccl.DataType;
import io.jccl.JcclException;
import io.jccl.OpType;
import io.jccl.PeerAbortedException;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import io.jccl.Work;
import io.jccl.algorithm.AlgorithmRegistry;
import io.jccl.algorithm.CollectiveAlgorithm;
import io.jccl.algorithm.Operands;
import io.jccl.algorithm.Topology;
import io.jccl.instrument.Counter;
import io.jccl.instrument.TrafficCounters;
import io.jccl.reduce.Reductions;
import io.jccl.transport.Streams;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The one pipeline behind every public call: validate locally (IllegalArgumentException, nothing sent), take a
 * sequence number, resolve the algorithm, wait for this call's turn (calls run in sequence order whether
 * synchronous or asynchronous), run it against the transport, and on any failure abort the communicator and
 * tell every peer.
 */
public final class DefaultCommunicator implements Communicator {
    private static final Logger LOG = LoggerFactory.getLogger(DefaultCommunicator.class);

    private final Transport transport;
    private final int communicatorId;
    private final CommunicatorConfig config;
    private final TrafficCounters counters = new TrafficCounters();
    private final io.jccl.transport.ArrayPool scratch = new io.jccl.transport.ArrayPool();
    private final AtomicLongArray p2pSent;
    private final AtomicLongArray p2pReceived;

    private final Object turn = new Object();
    private long nextSequence;
    private long serving;
    private ExecutorService async;
    private volatile RuntimeException failure;
    private volatile boolean closed;
    /** Calls of this rank running now (guarded by {@link #turn}). */
    private int inFlight;
    /** Why this rank ended its own calls (close or abort), or null. */
    private volatile String localEnd;
    private static final long CLOSE_WAIT_NANOS = 10_000_000_000L;
    private final io.jccl.instrument.TraceWriter trace;
    private final boolean ownsTrace;

    /** The world communicator (id 0) over {@code transport}. */
    public DefaultCommunicator(Transport transport, CommunicatorConfig config) {
        this(transport, 0, config);
    }

    /**
     * A communicator over {@code transport} whose frames travel on the streams of {@code communicatorId}, which
     * every member must agree on and no other live communicator over the same ranks may use.
     */
    public DefaultCommunicator(Transport transport, int communicatorId, CommunicatorConfig config) {
        this(transport, communicatorId, config, null);
    }

    private DefaultCommunicator(Transport transport, int communicatorId, CommunicatorConfig config,
                                io.jccl.instrument.TraceWriter parentTrace) {
        this.transport = Objects.requireNonNull(transport, "transport");
        this.communicatorId = communicatorId;
        this.ownsTrace = parentTrace == null && config.tracePrefix() != null;
        this.trace = parentTrace != null ? parentTrace
                : ownsTrace ? io.jccl.instrument.TraceWriter.open(config.tracePrefix(), transport.rank()) : null;
        this.config = Objects.requireNonNull(config, "config");
        this.p2pSent = new AtomicLongArray(transport.size());
        this.p2pReceived = new AtomicLongArray(transport.size());
    }

    @Override
    public int rank() {
        return transport.rank();
    }

    @Override
    public int size() {
        return transport.size();
    }

    @Override
    public String transportName() {
        return transport.name();
    }

    @Override
    public TrafficCounters counters() {
        return counters;
    }

    /** A validated call, waiting for its sequence number: stages the tensors and runs {@code algorithm}. */
    private interface Body {
        void run(CollectiveCall call, CollectiveAlgorithm algorithm);
    }

    private static final class Prepared {
        final OpType op;
        final DataType dtype;
        final long count;
        final int root;
        final ReduceOp reduceOp;
        final Algorithm algorithm;
        final CollectiveAlgorithm implementation;
        final Duration timeout;
        final Body body;

        Prepared(OpType op, DataType dtype, long count, int root, ReduceOp reduceOp, Algorithm algorithm,
                 CollectiveAlgorithm implementation, Duration timeout, Body body) {
            this.op = op;
            this.dtype = dtype;
            this.count = count;
            this.root = root;
            this.reduceOp = reduceOp;
            this.algorithm = algorithm;
            this.implementation = implementation;
            this.timeout = timeout;
            this.body = body;
        }
    }

    // ------------------------------------------------------------------ collectives

    @Override
    public void allReduce(Tensor tensor, ReduceOp op, CollectiveOptions options) {
        runSync(prepareAllReduce(tensor, op, options));
    }

    @Override
    public Work allReduceAsync(Tensor tensor, ReduceOp op, CollectiveOptions options) {
        return runAsync(prepareAllReduce(tensor, op, options));
    }

    private Prepared prepareAllReduce(Tensor t, ReduceOp op, CollectiveOptions o) {
        requireTensor(OpType.ALL_REDUCE, t, "tensor");
        requireOp(OpType.ALL_REDUCE, op, t.dtype());
        int world = size();
        return prepare(OpType.ALL_REDUCE, t.dtype(), t.count(), -1, op, o, (call, algorithm) -> {
            if (algorithm.runRegistered(call, t, op, op == ReduceOp.AVG ? world : 1)) {
                return; // a buffer from allocate(): peers read it in place, nothing is staged
            }
            Buf b = Staging.stage(t);
            reduceAll(call, algorithm, b, op, world);
            Staging.unstage(t, b);
        });
    }

    /** The allreduce proper, with AVG's division. */
    private static void reduceAll(CollectiveCall call, CollectiveAlgorithm algorithm, Buf b, ReduceOp op, int world) {
        algorithm.run(call, Operands.inPlace(b, op, -1));
        if (op == ReduceOp.AVG) {
            Reductions.divide(b, world);
        }
    }

    @Override
    public void allReduceCoalesced(java.util.List<Tensor> tensors, ReduceOp op, CollectiveOptions options) {
        runSync(prepareCoalesced(tensors, op, options));
    }

    @Override
    public Work allReduceCoalescedAsync(java.util.List<Tensor> tensors, ReduceOp op, CollectiveOptions options) {
        return runAsync(prepareCoalesced(tensors, op, options));
    }

    private Prepared prepareCoalesced(java.util.List<Tensor> tensors, ReduceOp op, CollectiveOptions o) {
        if (tensors == null || tensors.isEmpty()) {
            throw new IllegalArgumentException("allReduceCoalesced: no tensors");
        }
        DataType dt = tensors.get(0) == null ? null : tensors.get(0).dtype();
        long total = 0;
        for (Tensor t : tensors) {
            requireTensor(OpType.ALL_REDUCE, t, "a tensor");
            if (t.dtype() != dt) {
                throw new IllegalArgumentException("allReduceCoalesced: every tensor must have one dtype: "
                        + dt + " and " + t.dtype());
            }
            total += t.count();
        }
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("allReduceCoalesced: " + total + " elements in all exceed one buffer");
        }
        requireOp(OpType.ALL_REDUCE, op, dt);
        int world = size();
        int n = (int) total;
        return prepare(OpType.ALL_REDUCE, dt, n, -1, op, o, (call, algorithm) -> {
            Buf flat = Buf.allocate(dt, n);
            int at = 0;
            for (Tensor t : tensors) {
                Buf b = Staging.stage(t);
                b.copyTo(flat, at);
                at += b.count();
            }
            reduceAll(call, algorithm, flat, op, world);
            at = 0;
            for (Tensor t : tensors) {
                Buf b = Staging.stage(t);
                flat.copyTo(at, b, 0, b.count());
                Staging.unstage(t, b);
                at += b.count();
            }
        });
    }

    @Override
    public void broadcast(Tensor tensor, int root, CollectiveOptions options) {
        runSync(prepareBroadcast(tensor, root, options));
    }

    @Override
    public Work broadcastAsync(Tensor tensor, int root, CollectiveOptions options) {
        return runAsync(prepareBroadcast(tensor, root, options));
    }

    private Prepared prepareBroadcast(Tensor t, int root, CollectiveOptions o) {
        requireTensor(OpType.BROADCAST, t, "tensor");
        requireRoot(OpType.BROADCAST, root);
        return prepare(OpType.BROADCAST, t.dtype(), t.count(), root, null, o, (call, algorithm) -> {
            Buf b = Staging.stage(t);
            algorithm.run(call, Operands.inPlace(b, null, root));
            Staging.unstage(t, b);
        });
    }

    @Override
    public void allGather(Tensor input, Tensor output, CollectiveOptions options) {
        runSync(prepareAllGather(input, output, options));
    }

    @Override
    public Work allGatherAsync(Tensor input, Tensor output, CollectiveOptions options) {
        return runAsync(prepareAllGather(input, output, options));
    }

    private Prepared prepareAllGather(Tensor in, Tensor out, CollectiveOptions o) {
        requireTensor(OpType.ALL_GATHER, in, "input");
        requireTensor(OpType.ALL_GATHER, out, "output");
        requireSameType(OpType.ALL_GATHER, in, out);
        requireCount(OpType.ALL_GATHER, "output", out, (long) in.count() * size(),
                "size x input = " + size() + " x " + in.count());
        return prepare(OpType.ALL_GATHER, in.dtype(), in.count(), -1, null, o, (call, algorithm) -> {
            Buf ob = Staging.stage(out);
            algorithm.run(call, new Operands(Staging.stage(in), ob, null, -1));
            Staging.unstage(out, ob);
        });
    }

    @Override
    public void reduceScatter(Tensor input, Tensor output, ReduceOp op, CollectiveOptions options) {
        runSync(prepareReduceScatter(input, output, op, options));
    }

    @Override
    public Work reduceScatterAsync(Tensor input, Tensor output, ReduceOp op, CollectiveOptions options) {
        return runAsync(prepareReduceScatter(input, output, op, options));
    }

    private Prepared prepareReduceScatter(Tensor in, Tensor out, ReduceOp op, CollectiveOptions o) {
        requireTensor(OpType.REDUCE_SCATTER, in, "input");
        requireTensor(OpType.REDUCE_SCATTER, out, "output");
        requireSameType(OpType.REDUCE_SCATTER, in, out);
        requireOp(OpType.REDUCE_SCATTER, op, in.dtype());
        if (in.count() % size() != 0) {
            throw new IllegalArgumentException("reduceScatter input must hold a multiple of the world size ("
                    + size() + ") elements, got " + in.count());
        }
        requireCount(OpType.REDUCE_SCATTER, "output", out, in.count() / size(),
                "input / size = " + in.count() + " / " + size());
        int world = size();
        return prepare(OpType.REDUCE_SCATTER, in.dtype(), out.count(), -1, op, o, (call, algorithm) -> {
            Buf ob = Staging.stage(out);
            algorithm.run(call, new Operands(Staging.stage(in), ob, op, -1));
            if (op == ReduceOp.AVG) {
                Reductions.divide(ob, world);
            }
            Staging.unstage(out, ob);
        });
    }

    @Override
    public void reduce(Tensor tensor, int root, ReduceOp op, CollectiveOptions options) {
        runSync(prepareReduce(tensor, root, op, options));
    }

    @Override
    public Work reduceAsync(Tensor tensor, int root, ReduceOp op, CollectiveOptions options) {
        return runAsync(prepareReduce(tensor, root, op, options));
    }

    private Prepared prepareReduce(Tensor t, int root, ReduceOp op, CollectiveOptions o) {
        requireTensor(OpType.REDUCE, t, "tensor");
        requireRoot(OpType.REDUCE, root);
        requireOp(OpType.REDUCE, op, t.dtype());
        int world = size();
        return prepare(OpType.REDUCE, t.dtype(), t.count(), root, op, o, (call, algorithm) -> {
            Buf b = Staging.stage(t);
            algorithm.run(call, Operands.inPlace(b, op, root));
            if (call.rank() == root) {
                if (op == ReduceOp.AVG) {
                    Reductions.divide(b, world);
                }
                Staging.unstage(t, b);
            }
        });
    }

    @Override
    public void gather(Tensor input, Tensor output, int root, CollectiveOptions options) {
        runSync(prepareGather(input, output, root, options));
    }

    @Override
    public Work gatherAsync(Tensor input, Tensor output, int root, CollectiveOptions options) {
        return runAsync(prepareGather(input, output, root, options));
    }

    private Prepared prepareGather(Tensor in, Tensor out, int root, CollectiveOptions o) {
        requireTensor(OpType.GATHER, in, "input");
        requireRoot(OpType.GATHER, root);
        boolean isRoot = rank() == root;
        if (isRoot) {
            requireTensor(OpType.GATHER, out, "output on the root");
            requireSameType(OpType.GATHER, in, out);
            requireCount(OpType.GATHER, "output", out, (long) in.count() * size(),
                    "size x input = " + size() + " x " + in.count());
        }
        return prepare(OpType.GATHER, in.dtype(), in.count(), root, null, o, (call, algorithm) -> {
            Buf ob = isRoot ? Staging.stage(out) : null;
            algorithm.run(call, new Operands(Staging.stage(in), ob, null, root));
            if (isRoot) {
                Staging.unstage(out, ob);
            }
        });
    }

    @Override
    public void scatter(Tensor input, Tensor output, int root, CollectiveOptions options) {
        runSync(prepareScatter(input, output, root, options));
    }

    @Override
    public Work scatterAsync(Tensor input, Tensor output, int root, CollectiveOptions options) {
        return runAsync(prepareScatter(input, output, root, options));
    }

    private Prepared prepareScatter(Tensor in, Tensor out, int root, CollectiveOptions o) {
        requireTensor(OpType.SCATTER, out, "output");
        requireRoot(OpType.SCATTER, root);
        boolean isRoot = rank() == root;
        if (isRoot) {
            requireTensor(OpType.SCATTER, in, "input on the root");
            requireSameType(OpType.SCATTER, in, out);
            requireCount(OpType.SCATTER, "input", in, (long) out.count() * size(),
                    "size x output = " + size() + " x " + out.count());
        }
        return prepare(OpType.SCATTER, out.dtype(), out.count(), root, null, o, (call, algorithm) -> {
            Buf ob = Staging.stage(out);
            algorithm.run(call, new Operands(isRoot ? Staging.stage(in) : null, ob, null, root));
            Staging.unstage(out, ob);
        });
    }

    @Override
    public void allToAll(Tensor input, Tensor output, CollectiveOptions options) {
        runSync(prepareAllToAll(input, output, options));
    }

    @Override
    public Work allToAllAsync(Tensor input, Tensor output, CollectiveOptions options) {
        return runAsync(prepareAllToAll(input, output, options));
    }

    private Prepared prepareAllToAll(Tensor in, Tensor out, CollectiveOptions o) {
        requireTensor(OpType.ALL_TO_ALL, in, "input");
        requireTensor(OpType.ALL_TO_ALL, out, "output");
        requireSameType(OpType.ALL_TO_ALL, in, out);
        if (in.count() % size() != 0) {
            throw new IllegalArgumentException("allToAll input must hold a multiple of the world size (" + size()
                    + ") elements, got " + in.count());
        }
        requireCount(OpType.ALL_TO_ALL, "output", out, in.count(), "the input's count");
        return prepare(OpType.ALL_TO_ALL, in.dtype(), in.count(), -1, null, o, (call, algorithm) -> {
            Buf ob = Staging.stage(out);
            algorithm.run(call, new Operands(Staging.stage(in), ob, null, -1));
            Staging.unstage(out, ob);
        });
    }

    @Override
    public void barrier(CollectiveOptions options) {
        runSync(prepareBarrier(options));
    }

    @Override
    public Work barrierAsync(CollectiveOptions options) {
        return runAsync(prepareBarrier(options));
    }

    private Prepared prepareBarrier(CollectiveOptions o) {
        return prepare(OpType.BARRIER, DataType.UINT8, 0, -1, null, o,
                (call, algorithm) -> algorithm.run(call, Operands.NONE));
    }

    private static long epochMicros() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    /** One trace record for a finished (or failed) call; see docs/trace.md. */
    private void record(CollectiveCall call, long startMicros, long startNanos, RuntimeException error) {
        if (trace == null) {
            return;
        }
        Signature s = call.signature();
        long durationNanos = System.nanoTime() - startNanos;
        String json = "{\"rank\":" + rank() + ",\"world\":" + size() + ",\"comm\":" + communicatorId
                + ",\"op\":\"" + s.op().label() + "\",\"seq\":" + s.sequence() + ",\"algorithm\":\""
                + (s.algorithm() == null ? "NONE" : s.algorithm().name()) + "\",\"transport\":\"" + transport.name()
                + "\",\"dtype\":\"" + s.dtype().torchName() + "\",\"count\":" + s.count() + ",\"reduceOp\":"
                + (s.reduceOp() == null ? "null" : "\"" + s.reduceOp().name() + "\"") + ",\"root\":" + s.root() + ","
                + call.trafficJson() + ",\"startEpochUs\":" + startMicros + ",\"durationNs\":" + durationNanos
                + ",\"status\":" + io.jccl.instrument.TraceWriter.quote(error == null ? "ok" : error.getMessage())
                + "}";
        trace.write(json);
    }

    // ------------------------------------------------------------------ sub-groups

    private int splits;

    @Override
    public Communicator split(int color, int key) {
        if (color < UNDEFINED) {
            throw new IllegalArgumentException("split: color must be >= 0 or UNDEFINED (-1), got " + color);
        }
        int p = size();
        int[] mine = {color, key};
        int[] all = new int[2 * p];
        allGather(Tensor.of(mine), Tensor.of(all));
        int splitIndex;
        synchronized (this) {
            splitIndex = splits++;
        }
        if (color == UNDEFINED) {
            return null;
        }
        Integer[] members = java.util.stream.IntStream.range(0, p).filter(r -> all[2 * r] == color).boxed()
                .sorted(java.util.Comparator.<Integer>comparingInt(r -> all[2 * r + 1]).thenComparingInt(r -> r))
                .toArray(Integer[]::new);
        int[] parentRanks = new int[members.length];
        int childRank = -1;
        for (int i = 0; i < members.length; i++) {
            parentRanks[i] = members[i];
            if (members[i] == rank()) {
                childRank = i;
            }
        }
        return new DefaultCommunicator(new io.jccl.transport.SubTransport(transport, parentRanks, childRank),
                childId(communicatorId, splitIndex, color), config, trace);
    }

    /** A 30-bit id for a child, the same on every member; distinct from its parent's and siblings' ids. */
    static int childId(int parentId, int splitIndex, int color) {
        long h = parentId * 0x9E3779B97F4A7C15L + (splitIndex + 1) * 0xC2B2AE3D27D4EB4FL + (color + 1) * 0x165667B19E3779F9L;
        h ^= h >>> 31;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 29;
        int id = (int) (h & 0x3FFFFFFF);
        return id == 0 || id == parentId ? id + 1 : id;
    }

    // ------------------------------------------------------------------ point to point

    @Override
    public void send(Tensor tensor, int dst, int tag) {
        requireTensor(OpType.SEND, tensor, "tensor");
        requirePeer(OpType.SEND, dst, "dst");
        checkUsable(OpType.SEND);
        Signature sig = new Signature(OpType.SEND, p2pSent.getAndIncrement(dst), tensor.dtype(), tensor.count(), tag,
                null, Algorithm.DIRECT);
        CollectiveCall call = new CollectiveCall(transport, Streams.pointToPoint(communicatorId), sig,
                config.timeout(), counters);
        counters.add(OpType.SEND, Counter.CALLS, 1);
        enterCall();
        try {
            call.send(dst, Staging.stage(tensor));
        } catch (RuntimeException e) {
            throw fail(ended(OpType.SEND, sig.sequence(), e));
        } finally {
            exitCall();
        }
    }

    @Override
    public void recv(Tensor tensor, int src, int tag, CollectiveOptions options) {
        requireTensor(OpType.RECV, tensor, "tensor");
        requirePeer(OpType.RECV, src, "src");
        Objects.requireNonNull(options, "options");
        checkUsable(OpType.RECV);
        Signature sig = new Signature(OpType.RECV, p2pReceived.getAndIncrement(src), tensor.dtype(), tensor.count(),
                tag, null, Algorithm.DIRECT);
        Duration timeout = options.timeout() != null ? options.timeout() : config.timeout();
        CollectiveCall call = new CollectiveCall(transport, Streams.pointToPoint(communicatorId), sig, timeout,
                counters);
        counters.add(OpType.RECV, Counter.CALLS, 1);
        enterCall();
        try {
            Buf b = Staging.stage(tensor);
            call.recvInto(src, b);
            Staging.unstage(tensor, b);
        } catch (RuntimeException e) {
            throw fail(ended(OpType.RECV, sig.sequence(), e));
        } finally {
            exitCall();
        }
    }

    // ------------------------------------------------------------------ the pipeline

    private Prepared prepare(OpType op, DataType dtype, long count, int root, ReduceOp reduceOp,
                             CollectiveOptions options, Body body) {
        if (options == null) {
            throw new IllegalArgumentException(op.label() + " options are null; use CollectiveOptions.DEFAULT");
        }
        Algorithm algorithm = choose(op, dtype, count, options.algorithm());
        CollectiveAlgorithm implementation = AlgorithmRegistry.standard().get(op, algorithm);
        String unsupported = implementation.unsupported(topology());
        if (unsupported != null) {
            throw new IllegalArgumentException(op.label() + ": " + unsupported);
        }
        Duration timeout = options.timeout() != null ? options.timeout() : config.timeout();
        return new Prepared(op, dtype, count, root, reduceOp, algorithm, implementation, timeout, body);
    }

    /** This communicator as the algorithms see it. */
    private Topology topology() {
        io.jccl.transport.SharedArena a = transport.arena();
        return new Topology(size(), transport.name(), transport instanceof io.jccl.transport.SubTransport, a != null,
                a == null ? 0 : a.bufferBytes());
    }

    private AlgorithmSelector selector;

    @Override
    public Tensor allocate(DataType dtype, int count) {
        Objects.requireNonNull(dtype, "dtype");
        if (count < 0) {
            throw new IllegalArgumentException("allocate: count must be >= 0, got " + count);
        }
        io.jccl.transport.SharedArena a = transport.arena();
        return a != null ? a.allocate(dtype, count) : Tensor.ofArray(dtype, dtype.newArray(count), 0, count);
    }

    @Override
    public Algorithm algorithmFor(OpType op, DataType dtype, long count) {
        return choose(op, dtype, count, Algorithm.AUTO);
    }

    private Algorithm choose(OpType op, DataType dtype, long count, Algorithm perCall) {
        Algorithm requested = perCall == null || perCall == Algorithm.AUTO ? config.algorithm(op) : perCall;
        return requested == null || requested == Algorithm.AUTO ? selector().choose(op, count * dtype.sizeBytes())
                : Algorithm.resolve(op, requested);
    }

    /** The AUTO policy of this communicator (see {@link AlgorithmSelector}). */
    public synchronized AlgorithmSelector selector() {
        if (selector == null) {
            io.jccl.transport.SharedArena a = transport.arena();
            selector = new AlgorithmSelector(CostModel.load(), transport.name(), a == null ? 0 : a.bufferBytes(),
                    size());
        }
        return selector;
    }

    private void runSync(Prepared p) {
        long seq = takeSequence(p.op);
        execute(p, seq);
    }

    private Work runAsync(Prepared p) {
        long seq = takeSequence(p.op);
        CompletableFuture<Void> future = new CompletableFuture<>();
        asyncExecutor().execute(() -> {
            try {
                execute(p, seq);
                future.complete(null);
            } catch (Throwable t) {
                future.completeExceptionally(t);
            }
        });
        return new Work(future);
    }

    private long takeSequence(OpType op) {
        synchronized (turn) {
            checkUsable(op);
            return nextSequence++;
        }
    }

    private void execute(Prepared p, long seq) {
        awaitTurn(seq);
        try {
            RuntimeException f = failure;
            if (f != null || closed) {
                throw new CommunicatorAbortedException(rank(), p.op,
                        closed ? "the communicator is closed" : "the communicator failed earlier: " + f.getMessage(),
                        f);
            }
            Signature sig = new Signature(p.op, seq, p.dtype, p.count, p.root, p.reduceOp, p.algorithm);
            CollectiveCall call = new CollectiveCall(transport, Streams.collective(communicatorId), sig, p.timeout,
                    counters, scratch);
            counters.add(p.op, Counter.CALLS, 1);
            long startNanos = System.nanoTime();
            long startMicros = trace == null ? 0 : epochMicros();
            enterCall();
            try {
                p.implementation.begin(call);
                try {
                    p.body.run(call, p.implementation);
                } finally {
                    p.implementation.end(call);
                }
                record(call, startMicros, startNanos, null);
            } catch (RuntimeException e) {
                RuntimeException end = ended(p.op, seq, e);
                record(call, startMicros, startNanos, end);
                throw fail(end);
            } finally {
                exitCall();
            }
        } finally {
            passTurn();
        }
    }

    private void awaitTurn(long seq) {
        boolean interrupted = false;
        synchronized (turn) {
            while (serving != seq) {
                try {
                    turn.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void passTurn() {
        synchronized (turn) {
            serving++;
            turn.notifyAll();
        }
    }

    /**
     * Records the first failure and tells every peer. A failure this rank learned from a peer is passed on with
     * that peer as its origin: peers that have not noticed yet (a death seen first by one rank) learn the cause
     * instead of only that this rank stopped.
     */
    private RuntimeException fail(RuntimeException e) {
        boolean first;
        synchronized (turn) {
            first = failure == null;
            if (first) {
                failure = e;
            }
        }
        if (first) {
            LOG.debug("rank {} aborting peers: {}", rank(), e.getMessage());
            if (e instanceof PeerAbortedException) {
                PeerAbortedException p = (PeerAbortedException) e;
                notifyPeers(p.originRank(), p.reason());
            } else {
                notifyPeers(rank(), e.getMessage());
            }
        }
        return e;
    }

    private void notifyPeers(int origin, String reason) {
        try {
            Signature sig = new Signature(OpType.BARRIER, -1, DataType.UINT8, 0, -1, null, null);
            int[] peers = new int[size()];
            for (int i = 0; i < peers.length; i++) {
                peers[i] = i;
            }
            int source = origin >= 0 && origin < size() ? origin : rank();
            transport.abortPeers(peers, sig.header(FrameDescriptor.TYPE_ABORT, source, 0, 0,
                    Streams.collective(communicatorId)), reason);
        } catch (RuntimeException notified) {
            LOG.warn("rank {} could not notify every peer of its failure", rank(), notified);
        }
    }

    @Override
    public void abort(String reason) {
        String why = reason == null ? "aborted" : reason;
        String message = "rank " + rank() + " aborted the communicator: " + why;
        fail(new JcclException(rank(), null, -1, message, null));
        interruptOwnCall(message);
    }

    /** A call of this rank's (collective or point-to-point) is running: {@link #close()} waits for it. */
    private void enterCall() {
        synchronized (turn) {
            inFlight++;
        }
    }

    private void exitCall() {
        synchronized (turn) {
            inFlight--;
            turn.notifyAll();
        }
    }

    /**
     * Ends this rank's own call in flight, if any: close() and abort() on another thread make it fail at once
     * (as NCCL's {@code ncclCommAbort}) instead of at its deadline or when a peer answers.
     */
    private void interruptOwnCall(String reason) {
        synchronized (turn) {
            if (localEnd == null) {
                localEnd = reason;
            }
            if (inFlight == 0) {
                return;
            }
        }
        Signature sig = new Signature(OpType.BARRIER, -1, DataType.UINT8, 0, -1, null, null);
        byte[] bytes = reason.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        FrameHeader h = sig.header(FrameDescriptor.TYPE_ABORT, rank(), 0, bytes.length,
                Streams.collective(communicatorId));
        try {
            transport.interrupt(new io.jccl.transport.Frame(h, bytes));
        } catch (RuntimeException e) {
            LOG.warn("rank {} could not interrupt its own call in flight", rank(), e);
        }
    }

    /**
     * The failure a call reports: when this rank itself ended the call (close() or abort() on another thread),
     * a {@link CommunicatorAbortedException} that says so, not an abort that seems to come from a peer.
     */
    private RuntimeException ended(OpType op, long seq, RuntimeException e) {
        String why = localEnd;
        if (why != null && e instanceof PeerAbortedException && ((PeerAbortedException) e).originRank() == rank()) {
            return new CommunicatorAbortedException(rank(), op, seq, why, e);
        }
        return e;
    }

    private void checkUsable(OpType op) {
        if (closed) {
            throw new CommunicatorAbortedException(rank(), op, "the communicator is closed", null);
        }
        RuntimeException f = failure;
        if (f != null) {
            throw new CommunicatorAbortedException(rank(), op, "the communicator failed earlier: " + f.getMessage(),
                    f);
        }
    }

    private synchronized ExecutorService asyncExecutor() {
        if (async == null) {
            async = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "jccl-rank-" + rank() + "-async");
                t.setDaemon(true);
                return t;
            });
        }
        return async;
    }

    @Override
    public void close() {
        synchronized (turn) {
            if (closed) {
                return;
            }
            closed = true;
        }
        interruptOwnCall("rank " + rank() + " closed its communicator during the call");
        // wait for the interrupted call to leave before the transport closes under it
        long until = System.nanoTime() + CLOSE_WAIT_NANOS;
        boolean interrupted = false;
        synchronized (turn) {
            while (inFlight > 0 && until - System.nanoTime() > 0) {
                try {
                    turn.wait(Math.max(1, (until - System.nanoTime()) / 1_000_000));
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (inFlight > 0) {
                LOG.warn("rank {}: a call still runs {} ms after close(); closing the transport anyway", rank(),
                        CLOSE_WAIT_NANOS / 1_000_000);
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        if (ownsTrace) {
            trace.close();
        }
        synchronized (this) {
            if (async != null) {
                async.shutdown();
            }
        }
        transport.close();
    }

    // ------------------------------------------------------------------ local argument checks

    private static void requireTensor(OpType op, Tensor t, String what) {
        if (t == null) {
            throw new IllegalArgumentException(op.label() + ": " + what + " is null");
        }
    }

    private static void requireSameType(OpType op, Tensor a, Tensor b) {
        if (a.dtype() != b.dtype()) {
            throw new IllegalArgumentException(op.label() + ": input and output dtypes differ: input="
                    + a.dtype() + ", output=" + b.dtype());
        }
    }

    private static void requireCount(OpType op, String what, Tensor t, long expected, String why) {
        if (t.count() != expected) {
            throw new IllegalArgumentException(op.label() + ": " + what + " must hold " + expected + " elements ("
                    + why + "), got " + t.count());
        }
    }

    private static void requireOp(OpType op, ReduceOp r, DataType dtype) {
        if (r == null) {
            throw new IllegalArgumentException(op.label() + ": reduce op is null");
        }
        if (!r.supports(dtype)) {
            throw new IllegalArgumentException(op.label() + ": reduce op " + r + " is not defined for " + dtype
                    + "; bitwise ops need an integer type");
        }
    }

    private void requireRoot(OpType op, int root) {
        if (root < 0 || root >= size()) {
            throw new IllegalArgumentException(op.label() + ": root must be in [0, " + size() + "), got " + root);
        }
    }

    private void requirePeer(OpType op, int peer, String what) {
        if (peer < 0 || peer >= size() || peer == rank()) {
            throw new IllegalArgumentException(op.label() + ": " + what + " must be another rank in [0, " + size()
                    + "), got " + peer + " on rank " + rank());
        }
    }
}
