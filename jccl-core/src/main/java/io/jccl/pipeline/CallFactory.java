package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.CommunicatorConfig;
import io.jccl.DataType;
import io.jccl.JcclException;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import io.jccl.algorithm.AlgorithmRegistry;
import io.jccl.algorithm.CollectiveAlgorithm;
import io.jccl.algorithm.Operands;
import io.jccl.algorithm.Topology;
import io.jccl.buffer.Buf;
import io.jccl.reduce.Reductions;
import io.jccl.step.CollectiveCall;
import io.jccl.step.Signature;
import io.jccl.transport.SharedArena;
import io.jccl.transport.SubTransport;
import io.jccl.transport.Transport;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * Turns a public collective call into a {@link PreparedCall}, on the caller's thread: checks its arguments
 * ({@link ArgumentChecks}), resolves its algorithm (deterministic mode's {@link Algorithm#ORDERED} for a
 * floating-point reduction, else the call's option, else the configuration's, else AUTO's
 * {@link AlgorithmSelector}) to an implementation in the {@link AlgorithmRegistry}, refuses one that cannot run
 * here, and builds the body that stages the tensors ({@link Staging}), runs the algorithm and applies AVG's
 * division.
 */
final class CallFactory {
    private final Transport transport;
    private final Staging staging;
    private final CommunicatorConfig config;
    private final ArgumentChecks checks;
    private final AlgorithmRegistry registry = AlgorithmRegistry.standard();
    private volatile AlgorithmSelector selector;
    /** This communicator as the algorithms see it: its transport's arena and layout do not change. */
    private final Topology topology;
    /** {@link Topology#multiHost()} of {@link #topology}, asked on every call. */
    private final boolean multiHost;
    /** The communicator's size (AVG divides by it). */
    private final int world;
    /**
     * By calling thread: the prepared call {@link #lend} fills for its next call. A thread makes one call at a time
     * unless it queues an asynchronous one, which {@link #detach}es it first.
     */
    private final ThreadLocal<PreparedCall> mine = ThreadLocal.withInitial(PreparedCall::new);

    CallFactory(Transport transport, CommunicatorConfig config) {
        this.transport = transport;
        this.staging = new Staging(transport.arena() == null);
        this.config = config;
        this.checks = new ArgumentChecks(transport.rank(), transport.size());
        SharedArena a = transport.arena();
        SharedArena host = transport.hostArena();
        this.topology = new Topology(transport.size(), transport.name(), transport instanceof SubTransport, a != null,
                a == null ? 0 : a.bufferBytes(), transport.hostOf(), null, host == null ? 0 : host.bufferBytes());
        this.multiHost = topology.multiHost();
        world = transport.size();
    }

    ArgumentChecks checks() {
        return checks;
    }

    PreparedCall allReduce(Tensor t, ReduceOp op, CollectiveOptions o) {
        checks.allReduce(t, op);
        return prepare(OpType.ALL_REDUCE, t.dtype(), t.count(), -1, op, o, allReduceBody, t, t);
    }

    private final PreparedCall.Body allReduceBody = this::runAllReduce;

    private void runAllReduce(PreparedCall p, CollectiveCall call, CollectiveAlgorithm algorithm) {
        Tensor t = p.in();
        ReduceOp op = p.reduceOp();
        if (algorithm.runRegistered(call, t, op, op == ReduceOp.AVG ? world : 1)) {
            return; // a buffer from allocate(): peers read it in place, nothing is staged
        }
        Buf b = p.stage(staging, 0, t);
        reduceAll(call, algorithm, p.operands(b, b, op, -1), world);
        staging.unstage(t, b);
    }

    /** The allreduce proper, with AVG's division. */
    private static void reduceAll(CollectiveCall call, CollectiveAlgorithm algorithm, Operands operands, int world) {
        algorithm.run(call, operands);
        if (operands.reduceOp() == ReduceOp.AVG) {
            Reductions.divide(operands.data(), world);
        }
    }

    /**
     * One allreduce of all {@code tensors}, packed into one buffer. The call reduces the tensors the list holds now:
     * it checks and keeps a copy of the list, since the caller may clear and refill its list (a bucketing loop)
     * before an asynchronous call runs.
     */
    PreparedCall allReduceCoalesced(List<Tensor> tensors, ReduceOp op, CollectiveOptions o) {
        // a copy that may hold null, which the checks report as a bad argument
        List<Tensor> parts = tensors == null ? null : Arrays.asList(tensors.toArray(new Tensor[0]));
        int n = checks.allReduceCoalesced(parts, op);
        DataType dt = parts.get(0).dtype();
        int[] counts = new int[parts.size()];
        for (int i = 0; i < counts.length; i++) {
            counts[i] = parts.get(i).count();
        }
        // the list's layout in the signature: another split of the same total on a peer is a mismatch
        return prepare(OpType.ALL_REDUCE, dt, n, Signature.layoutTag(counts), op, o, (p, call, algorithm) -> {
            Buf flat = Buf.allocate(dt, n);
            int at = 0;
            for (Tensor t : parts) {
                Buf b = staging.stage(t);
                b.copyTo(flat, at);
                at += b.count();
            }
            reduceAll(call, algorithm, Operands.inPlace(flat, op, -1), world);
            at = 0;
            for (Tensor t : parts) {
                Buf b = staging.stage(t);
                flat.copyTo(at, b, 0, b.count());
                staging.unstage(t, b);
                at += b.count();
            }
        }, null, null);
    }

    PreparedCall broadcast(Tensor t, int root, CollectiveOptions o) {
        checks.broadcast(t, root);
        return prepare(OpType.BROADCAST, t.dtype(), t.count(), root, null, o, broadcastBody, t, t);
    }

    private final PreparedCall.Body broadcastBody = this::runBroadcast;

    private void runBroadcast(PreparedCall p, CollectiveCall call, CollectiveAlgorithm algorithm) {
        Buf b = p.stage(staging, 0, p.in());
        algorithm.run(call, p.operands(b, b, null, p.root()));
        staging.unstage(p.in(), b);
    }

    PreparedCall allGather(Tensor in, Tensor out, CollectiveOptions o) {
        return allGather(in, out, o, -1);
    }

    /**
     * An allgather whose signature's root is {@code exchange}: -1 for a user's, or one of the tags of the exchanges
     * jccl makes for itself ({@link io.jccl.step.Signature#EXCHANGE_SPLIT} and after), which then pair only with
     * their own kind.
     */
    PreparedCall allGather(Tensor in, Tensor out, CollectiveOptions o, int exchange) {
        checks.allGather(in, out);
        return prepare(OpType.ALL_GATHER, in.dtype(), in.count(), exchange, null, o, copyingBody, in, out);
    }

    /**
     * Whether both of the call's tensors are worked on as the caller's own memory ({@link Staging#isView}): where
     * staging copied either, input and output share nothing however their memory lies.
     */
    private boolean bothViews(PreparedCall p) {
        return staging.isView(p.in()) && staging.isView(p.out());
    }

    /** Allgather: the input to the output, nothing reduced, no root. */
    private final PreparedCall.Body copyingBody = this::runCopying;

    private void runCopying(PreparedCall p, CollectiveCall call, CollectiveAlgorithm algorithm) {
        Buf ob = p.stage(staging, 1, p.out());
        Buf ib = p.stage(staging, 0, p.in());
        // in place as NCCL does it (the input is this rank's block of the output) the algorithms need nothing more;
        // any other sharing of memory (or one they cannot rule out) could let a write of the output reach input
        // that peers have yet to read, so the input is copied first
        boolean copy = p.in().mayOverlap(p.out()) && !p.in().isBlockOf(p.out(), transport.rank())
                && bothViews(p);
        Buf input = copy ? call.scratchCopy(ib) : ib;
        algorithm.run(call, p.operands(input, ob, null, -1));
        if (copy) {
            call.releaseScratch(input);
        }
        staging.unstage(p.out(), ob);
    }

    PreparedCall reduceScatter(Tensor in, Tensor out, ReduceOp op, CollectiveOptions o) {
        checks.reduceScatter(in, out, op);
        return prepare(OpType.REDUCE_SCATTER, in.dtype(), out.count(), -1, op, o, reduceScatterBody, in, out);
    }

    private final PreparedCall.Body reduceScatterBody = this::runReduceScatter;

    private void runReduceScatter(PreparedCall p, CollectiveCall call, CollectiveAlgorithm algorithm) {
        Buf ob = p.stage(staging, 1, p.out());
        Buf ib = p.stage(staging, 0, p.in());
        // in place as NCCL does it (the output is this rank's block of the input) needs nothing more; any other
        // sharing of memory is copied first (see runCopying)
        boolean copy = p.in().mayOverlap(p.out()) && !p.out().isBlockOf(p.in(), transport.rank()) && bothViews(p);
        Buf input = copy ? call.scratchCopy(ib) : ib;
        algorithm.run(call, p.operands(input, ob, p.reduceOp(), -1));
        if (copy) {
            call.releaseScratch(input);
        }
        if (p.reduceOp() == ReduceOp.AVG) {
            Reductions.divide(ob, world);
        }
        staging.unstage(p.out(), ob);
    }

    PreparedCall reduce(Tensor t, int root, ReduceOp op, CollectiveOptions o) {
        checks.reduce(t, root, op);
        return prepare(OpType.REDUCE, t.dtype(), t.count(), root, op, o, reduceBody, t, t);
    }

    private final PreparedCall.Body reduceBody = this::runReduce;

    private void runReduce(PreparedCall p, CollectiveCall call, CollectiveAlgorithm algorithm) {
        Buf b = p.stage(staging, 0, p.in());
        algorithm.run(call, p.operands(b, b, p.reduceOp(), p.root()));
        if (call.rank() == p.root()) {
            if (p.reduceOp() == ReduceOp.AVG) {
                Reductions.divide(b, world);
            }
            staging.unstage(p.in(), b);
        }
    }

    PreparedCall gather(Tensor in, Tensor out, int root, CollectiveOptions o) {
        checks.gather(in, out, root);
        return prepare(OpType.GATHER, in.dtype(), in.count(), root, null, o, gatherBody, in, out);
    }

    private final PreparedCall.Body gatherBody = this::runGather;

    private void runGather(PreparedCall p, CollectiveCall call, CollectiveAlgorithm algorithm) {
        boolean isRoot = call.rank() == p.root();
        Buf ob = isRoot ? p.stage(staging, 1, p.out()) : null;
        algorithm.run(call, p.operands(p.stage(staging, 0, p.in()), ob, null, p.root()));
        if (isRoot) {
            staging.unstage(p.out(), ob);
        }
    }

    PreparedCall scatter(Tensor in, Tensor out, int root, CollectiveOptions o) {
        checks.scatter(in, out, root);
        return prepare(OpType.SCATTER, out.dtype(), out.count(), root, null, o, scatterBody, in, out);
    }

    private final PreparedCall.Body scatterBody = this::runScatter;

    private void runScatter(PreparedCall p, CollectiveCall call, CollectiveAlgorithm algorithm) {
        boolean isRoot = call.rank() == p.root();
        Buf ob = p.stage(staging, 1, p.out());
        algorithm.run(call, p.operands(isRoot ? p.stage(staging, 0, p.in()) : null, ob, null, p.root()));
        staging.unstage(p.out(), ob);
    }

    PreparedCall allToAll(Tensor in, Tensor out, CollectiveOptions o) {
        checks.allToAll(in, out);
        return prepare(OpType.ALL_TO_ALL, in.dtype(), in.count(), -1, null, o, allToAllBody, in, out);
    }

    private final PreparedCall.Body allToAllBody = this::runAllToAll;

    /**
     * As {@link #runCopying}; an input that overlaps the output (in place: the same tensor) is copied first, since
     * the exchange writes blocks of the output that it has yet to send from the input.
     */
    private void runAllToAll(PreparedCall p, CollectiveCall call, CollectiveAlgorithm algorithm) {
        Buf ob = p.stage(staging, 1, p.out());
        Buf ib = p.stage(staging, 0, p.in());
        boolean overlaps = p.in().mayOverlap(p.out()) && bothViews(p); // two views of one direct memory too
        Buf input = overlaps ? call.scratchCopy(ib) : ib;
        algorithm.run(call, p.operands(input, ob, null, -1));
        if (overlaps) {
            call.releaseScratch(input);
        }
        staging.unstage(p.out(), ob);
    }

    /**
     * The second call of {@code allGatherV}, once every rank knows every length ({@code lengths}): a ring in which
     * each rank's bytes travel once around, block by block (step s: rank k sends the block of rank k - s to k + 1
     * and takes that of rank k - s - 1 from k - 1). Its signature counts the longest block, which every rank
     * computes alike, and its root is {@link io.jccl.step.Signature#EXCHANGE_BLOCKS}, so that it pairs with no user's
     * allGather; a block whose length disagrees with {@code lengths} fails the receiver's frame check. The
     * arrays of {@code out} are made in the call, so that a length no array has, or no memory for one, fails the
     * communicator and tells the peers, which are in the call too.
     */
    PreparedCall allGatherV(byte[] mine, int[] lengths, byte[][] out) {
        int max = 0;
        for (int n : lengths) {
            max = Math.max(max, n);
        }
        return prepare(OpType.ALL_GATHER, DataType.UINT8, max, io.jccl.step.Signature.EXCHANGE_BLOCKS, null,
                CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.RING), (prepared, call, algorithm) -> {
                    checkLengths(call, "allGatherV", lengths);
                    for (int r = 0; r < lengths.length; r++) {
                        out[r] = r == call.rank() ? mine.clone() : new byte[lengths[r]];
                    }
                    int p = call.size();
                    int k = call.rank();
                    for (int s = 0; s < p - 1; s++) {
                        call.step(s, "ring allgatherv");
                        int outBlock = Math.floorMod(k - s, p);
                        int inBlock = Math.floorMod(k - s - 1, p);
                        call.sendRecv((k + 1) % p, new Buf(DataType.UINT8, out[outBlock], 0, out[outBlock].length),
                                Math.floorMod(k - 1, p), new Buf(DataType.UINT8, out[inBlock], 0, out[inBlock].length),
                                null);
                    }
                }, null, null);
    }

    /**
     * The second call of {@code gatherV}: the signature check (a rooted exchange would let a rank finish before a
     * disagreement shows), then every rank sends its bytes to {@code root}, which receives each into an array of
     * the length that rank announced ({@code out}, null off the root).
     */
    PreparedCall gatherV(byte[] mine, int[] lengths, byte[][] out, int root) {
        int max = 0;
        for (int n : lengths) {
            max = Math.max(max, n);
        }
        return prepare(OpType.GATHER, DataType.UINT8, max, root, null,
                CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.DIRECT), (prepared, call, algorithm) -> {
                    checkLengths(call, "gatherV", lengths);
                    int step = io.jccl.algorithm.SignatureCheck.agree(call, 0);
                    call.step(step, "gatherv to the root");
                    if (call.rank() != root) {
                        call.send(root, new Buf(DataType.UINT8, mine, 0, mine.length));
                        return;
                    }
                    CollectiveCall.Receive[] posted = new CollectiveCall.Receive[call.size()];
                    for (int r = 0; r < call.size(); r++) {
                        out[r] = r == root ? mine.clone() : new byte[lengths[r]];
                        if (r != root) {
                            posted[r] = call.postRecv(r, new Buf(DataType.UINT8, out[r], 0, lengths[r]), null);
                        }
                    }
                    for (CollectiveCall.Receive rcv : posted) {
                        if (rcv != null) {
                            call.complete(rcv);
                        }
                    }
                }, null, null);
    }

    /**
     * Fails {@code call}, the second call of {@code what} (allGatherV, gatherV), if a rank announced a length no
     * array has in the first: every rank has the same lengths, so each fails alike, naming the rank that sent it.
     */
    private static void checkLengths(CollectiveCall call, String what, int[] lengths) {
        for (int r = 0; r < lengths.length; r++) {
            if (lengths[r] < 0) {
                throw new JcclException(call.rank(), call.signature().op(), call.signature().sequence(), "rank "
                        + call.rank() + ": " + what + "'s " + call.signature().op().label() + " #"
                        + call.signature().sequence() + ": rank " + r + " announced " + lengths[r] + " bytes in the "
                        + "allgather of the lengths (a length is 0 or more: did rank " + r + " make another call?)",
                        null);
            }
        }
    }

    /**
     * torch's {@code monitored_barrier}: every rank tells rank 0 it arrived, rank 0 waits for all of them until
     * {@code timeout} and then releases them; if some never arrive, rank 0 fails naming every one of them (not
     * only the first), and the others learn it from rank 0's abort. Its signature says algorithm DIRECT, so a rank
     * in a plain barrier meanwhile is told apart.
     */
    PreparedCall monitoredBarrier(Duration given) {
        if (given == null || given.isNegative() || given.isZero()) {
            throw checks.bad(OpType.BARRIER, "monitoredBarrier: the timeout must be positive, got " + given);
        }
        Duration timeout = io.jccl.JcclSettings.bounded(given);
        CollectiveAlgorithm placeholder = registry.get(OpType.BARRIER, Algorithm.DISSEMINATION);
        return lend().fill(OpType.BARRIER, DataType.UINT8, 0, 0, null, Algorithm.DIRECT, placeholder, timeout,
                false, (prepared, call, algorithm) -> {
                    int p = call.size();
                    if (p == 1) {
                        return;
                    }
                    Buf none = Buf.allocate(DataType.UINT8, 0);
                    call.step(0, "monitored barrier: arrivals at rank 0");
                    if (call.rank() != 0) {
                        call.send(0, none);
                        call.step(1, "monitored barrier: release from rank 0");
                        call.recvInto(0, none);
                        return;
                    }
                    int[] others = new int[p - 1];
                    Buf[] into = new Buf[p - 1];
                    for (int r = 1; r < p; r++) {
                        others[r - 1] = r;
                        into[r - 1] = none;
                    }
                    List<Integer> missing = call.arrivals(others, into);
                    if (!missing.isEmpty()) {
                        String who = missing.size() == 1 ? "rank " + missing.get(0)
                                : "ranks " + missing.toString().replaceAll("[\\[\\]]", "");
                        throw new io.jccl.CollectiveTimeoutException(call.rank(), OpType.BARRIER,
                                call.signature().sequence(), missing.get(0), missing.get(0), 0,
                                "a monitored barrier's arrivals", timeout, who + " never entered barrier #"
                                + call.signature().sequence() + " (a monitored barrier: every rank that did not "
                                + "arrive in time)");
                    }
                    call.step(1, "monitored barrier: release from rank 0");
                    for (int r = 1; r < p; r++) {
                        call.send(r, none);
                    }
                }, null, null);
    }

    PreparedCall barrier(CollectiveOptions o) {
        return prepare(OpType.BARRIER, DataType.UINT8, 0, -1, null, o, barrierBody, null, null);
    }

    private final PreparedCall.Body barrierBody = (p, call, algorithm) -> algorithm.run(call, Operands.NONE);


    /** A prepared call to fill: the calling thread's own (a thread-local lookup; no lock, no atomic). */
    private PreparedCall lend() {
        return mine.get();
    }

    /**
     * Gives {@code p} (just {@link #lend lent} to this thread) to an asynchronous call, which may still wait in its
     * queue when this thread makes its next call: the thread gets a new prepared call of its own.
     */
    void detach(PreparedCall p) {
        if (mine.get() == p) {
            mine.set(new PreparedCall());
        }
    }

    /** Has a prepared call whose call has ended (or never ran) let go of the call's tensors. */
    void release(PreparedCall p) {
        p.clear();
    }

    private PreparedCall prepare(OpType op, DataType dtype, long count, int root, ReduceOp reduceOp,
                                 CollectiveOptions options, PreparedCall.Body body, Tensor in, Tensor out) {
        checks.options(op, options);
        Algorithm algorithm;
        try {
            algorithm = choose(op, dtype, count, options.algorithm());
        } catch (IllegalArgumentException e) { // an algorithm the operation lacks
            throw checks.bad(op, e.getMessage());
        }
        CollectiveAlgorithm implementation = registry.get(op, algorithm);
        String unsupported = implementation.unsupported(topology());
        if (unsupported != null) {
            throw checks.bad(op, op.label() + ": " + unsupported);
        }
        Duration timeout = options.timeout() != null ? options.timeout() : config.timeout();
        // across hosts the cost model says whether the link or the CPU is the limit (selector() reads it once)
        boolean overlap = multiHost && selector().overlapsHosts();
        return lend().fill(op, dtype, count, root, reduceOp, algorithm, implementation, timeout, overlap, body, in,
                out);
    }

    /** This communicator as the algorithms see it. */
    private Topology topology() {
        return topology;
    }

    /**
     * The algorithm a call of {@code op} with {@code perCall} in its options runs: in deterministic mode
     * {@link Algorithm#ORDERED} for a floating-point reduction that has it, whatever was asked for (see
     * {@link CommunicatorConfig#withDeterministic}); else the call's choice, the communicator's, or AUTO's.
     */
    Algorithm choose(OpType op, DataType dtype, long count, Algorithm perCall) {
        Algorithm requested = perCall == null || perCall == Algorithm.AUTO ? config.algorithm(op) : perCall;
        // an explicit choice the operation lacks is refused even where deterministic mode overrides it
        Algorithm explicit = requested == null || requested == Algorithm.AUTO ? null : Algorithm.resolve(op, requested);
        if (config.deterministic() && dtype.isFloatingPoint() && registry.find(op, Algorithm.ORDERED) != null) {
            return Algorithm.ORDERED;
        }
        return explicit != null ? explicit : selector().choose(op, count * dtype.sizeBytes());
    }

    /** The AUTO policy, made on first use (it reads the tuning file); no lock once made. */
    AlgorithmSelector selector() {
        AlgorithmSelector s = selector;
        if (s != null) {
            return s;
        }
        synchronized (this) {
            if (selector == null) {
                // the parameters every rank agreed on at initialisation (rank 0's), else this process's tuning file
                String agreed = config.tuneParameters();
                CostModel model = agreed != null ? CostModel.parse(agreed)
                        : CostModel.load(config.settings().tuneFile());
                selector = new AlgorithmSelector(model, topology);
            }
            return selector;
        }
    }
}
