package io.jccl;

import io.jccl.buffer.Buf;
import io.jccl.buffer.Bufs;
import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.reduce.HalfFloats;
import io.jccl.transport.Transport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Deterministic mode ({@link CommunicatorConfig#withDeterministic}, {@code JCCL_DETERMINISTIC=1}): floating-point
 * allreduce, reduce_scatter and reduce give, on every rank, exactly the bits of the sequential sum
 * {@code ((x0 + x1) + x2) ...} computed here, whatever the transport (threads, TCP, shm), the algorithm asked for,
 * the size (one segment or many) and the tensor's layout. Inputs span many binades, so that another order of
 * addition changes the bits, which the test shows for the ring with the mode off.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class DeterministicModeTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final List<DataType> FLOATS = List.of(DataType.FLOAT32, DataType.FLOAT64);
    private static final List<DataType> HALVES = List.of(DataType.FLOAT16, DataType.BFLOAT16);
    /** Empty, one element, fewer elements than ranks, uneven ring chunks, several gloo segments per chunk. */
    private static final int[] COUNTS = {0, 1, 3, 1001, 70_001};
    private static final int[] BLOCKS = {0, 1, 7, 3001};
    /** More than 1 MiB per slice on 5 ranks: every slice travels as several segments. */
    private static final int LARGE = 1_600_000;
    private static final List<Algorithm> ALL_REDUCE_REQUESTS = List.of(Algorithm.AUTO, Algorithm.RING,
            Algorithm.TREE, Algorithm.HALVING_DOUBLING, Algorithm.SHARED_MEMORY, Algorithm.ORDERED);
    private static final List<Algorithm> REDUCE_SCATTER_REQUESTS = List.of(Algorithm.AUTO, Algorithm.RING,
            Algorithm.SHARED_MEMORY, Algorithm.ORDERED);
    private static final List<Algorithm> REDUCE_REQUESTS = List.of(Algorithm.AUTO, Algorithm.RING,
            Algorithm.ORDERED);

    // ------------------------------------------------------------------ inputs and the reference

    /**
     * Rank {@code rank}'s input: signed values whose exponents spread over about the type's precision, so that
     * partial sums round differently in every order.
     */
    static Buf input(DataType dt, int count, long seed, int rank) {
        Random rnd = new Random(seed * 1_000_003L + rank * 7_919L + dt.ordinal() * 31L + count);
        int range = dt == DataType.FLOAT64 ? 53 : dt == DataType.FLOAT32 ? 24 : dt == DataType.FLOAT16 ? 10 : 8;
        Buf b = Buf.allocate(dt, count);
        for (int i = 0; i < count; i++) {
            double v = Math.scalb((1 + rnd.nextDouble()) * (rnd.nextBoolean() ? 1 : -1), rnd.nextInt(2 * range + 1)
                    - range);
            set(b, i, v);
        }
        return b;
    }

    private static void set(Buf b, int i, double v) {
        Object a = b.array();
        int at = b.offset() + i;
        switch (b.dtype()) {
            case FLOAT32: ((float[]) a)[at] = (float) v; break;
            case FLOAT64: ((double[]) a)[at] = v; break;
            case FLOAT16: ((short[]) a)[at] = HalfFloats.floatToHalf((float) v); break;
            case BFLOAT16: ((short[]) a)[at] = HalfFloats.floatToBfloat16((float) v); break;
            default: throw new AssertionError(b.dtype());
        }
    }

    /**
     * The sequential sum {@code acc = x0; acc = acc + x1; ...} in the element type (half types: each addition in
     * float, rounded back once), written out here independently of {@code io.jccl.reduce}; AVG then divides by
     * the number of inputs, once.
     */
    static Buf sequential(List<Buf> xs, ReduceOp op) {
        Buf first = xs.get(0);
        int n = first.count();
        int p = xs.size();
        Buf acc = first.copyOf(0, n);
        switch (first.dtype()) {
            case FLOAT32: {
                float[] a = (float[]) acc.array();
                for (int i = 0; i < n; i++) {
                    float s = a[i];
                    for (int j = 1; j < p; j++) {
                        s = s + ((float[]) xs.get(j).array())[xs.get(j).offset() + i];
                    }
                    a[i] = op == ReduceOp.AVG ? s / p : s;
                }
                break;
            }
            case FLOAT64: {
                double[] a = (double[]) acc.array();
                for (int i = 0; i < n; i++) {
                    double s = a[i];
                    for (int j = 1; j < p; j++) {
                        s = s + ((double[]) xs.get(j).array())[xs.get(j).offset() + i];
                    }
                    a[i] = op == ReduceOp.AVG ? s / p : s;
                }
                break;
            }
            case FLOAT16:
            case BFLOAT16: {
                boolean brain = first.dtype() == DataType.BFLOAT16;
                short[] a = (short[]) acc.array();
                for (int i = 0; i < n; i++) {
                    short s = a[i];
                    for (int j = 1; j < p; j++) {
                        short x = ((short[]) xs.get(j).array())[xs.get(j).offset() + i];
                        s = brain ? bf16(HalfFloats.bfloat16ToFloat(s) + HalfFloats.bfloat16ToFloat(x))
                                : HalfFloats.floatToHalf(HalfFloats.halfToFloat(s) + HalfFloats.halfToFloat(x));
                    }
                    if (op == ReduceOp.AVG) {
                        s = brain ? bf16(HalfFloats.bfloat16ToFloat(s) / p)
                                : HalfFloats.floatToHalf(HalfFloats.halfToFloat(s) / p);
                    }
                    a[i] = s;
                }
                break;
            }
            default:
                throw new AssertionError(first.dtype());
        }
        return acc;
    }

    private static short bf16(float f) {
        return HalfFloats.floatToBfloat16(f);
    }

    private static List<Buf> inputs(DataType dt, int count, long seed, int world) {
        List<Buf> in = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            in.add(input(dt, count, seed, r));
        }
        return in;
    }

    // ------------------------------------------------------------------ running ranks

    /** One call of the test on one rank: its result, to compare with the case's expected bits for that rank. */
    @FunctionalInterface
    interface Call {
        Buf run(Communicator comm) throws Exception;
    }

    /** A call every rank makes, and the bits each rank must hold afterwards. */
    record Case(String label, Call call, List<Buf> expected) {
    }

    private static CommunicatorConfig config(boolean deterministic) {
        return CommunicatorConfig.of(JcclSettings.defaults()).withTimeout(TIMEOUT).withDeterministic(deterministic);
    }

    /** A communicator per rank over {@code kind}, rank r with {@code configs.get(r)}. */
    private static List<Communicator> communicators(TransportKind kind, List<CommunicatorConfig> configs) {
        List<Communicator> comms = new ArrayList<>();
        List<Transport> transports = kind.connect(configs.size());
        for (int r = 0; r < configs.size(); r++) {
            comms.add(new DefaultCommunicator(transports.get(r), configs.get(r)));
        }
        return comms;
    }

    /** Runs {@code body} on every rank, each on its own thread; closes the communicators. */
    private static <T> List<RankHarness.Outcome<T>> run(List<Communicator> comms, Jccl.RankBody<T> body)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(comms.size());
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (Communicator c : comms) {
                futures.add(pool.submit(() -> body.run(c)));
            }
            List<RankHarness.Outcome<T>> out = new ArrayList<>();
            for (Future<T> f : futures) {
                try {
                    out.add(new RankHarness.Outcome<>(f.get(TIMEOUT.toMillis() * 4, TimeUnit.MILLISECONDS), null));
                } catch (java.util.concurrent.ExecutionException e) {
                    out.add(new RankHarness.Outcome<>(null, e.getCause()));
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
            TransportKind.closeAll(comms);
        }
    }

    /** Every case on every rank, in order; returns what differed, per rank ("" when nothing did). */
    private static List<String> runCases(List<Communicator> comms, List<Case> cases) throws Exception {
        List<RankHarness.Outcome<String>> out = run(comms, comm -> {
            StringBuilder problems = new StringBuilder();
            for (Case c : cases) {
                Buf got = c.call().run(comm);
                Buf want = c.expected().get(comm.rank());
                if (want != null && !Bufs.bitEqual(got, want)) {
                    problems.append("rank ").append(comm.rank()).append(", ").append(c.label()).append(": element ")
                            .append(firstDifference(got, want)).append(" differs\n");
                }
            }
            return problems.toString();
        });
        List<String> problems = new ArrayList<>();
        for (RankHarness.Outcome<String> o : out) {
            if (o.error != null) {
                throw new AssertionError("a rank failed", o.error);
            }
            problems.add(o.value);
        }
        return problems;
    }

    private static int firstDifference(Buf a, Buf b) {
        for (int i = 0; i < Math.min(a.count(), b.count()); i++) {
            if (!Bufs.bitEqual(a.slice(i, 1), b.slice(i, 1))) {
                return i;
            }
        }
        return Math.min(a.count(), b.count());
    }

    private static CollectiveOptions asking(Algorithm a) {
        return CollectiveOptions.DEFAULT.withAlgorithm(a);
    }

    private static Case allReduce(List<Buf> in, ReduceOp op, Algorithm requested) {
        Buf want = sequential(in, op);
        DataType dt = want.dtype();
        int n = want.count();
        return new Case("allReduce " + dt + " x" + n + " " + op + " asking " + requested, comm -> {
            Buf mine = in.get(comm.rank()).copyOf(0, n);
            comm.allReduce(Tensor.ofArray(dt, mine.array(), 0, n), op, asking(requested));
            return mine;
        }, Collections.nCopies(in.size(), want));
    }

    private static Case reduceScatter(List<Buf> in, ReduceOp op, Algorithm requested) {
        Buf sum = sequential(in, op);
        DataType dt = sum.dtype();
        int p = in.size();
        int block = sum.count() / p;
        List<Buf> want = new ArrayList<>();
        for (int r = 0; r < p; r++) {
            want.add(sum.copyOf(r * block, block));
        }
        return new Case("reduceScatter " + dt + " block " + block + " " + op + " asking " + requested, comm -> {
            Buf out = Buf.allocate(dt, block);
            comm.reduceScatter(Tensor.ofArray(dt, in.get(comm.rank()).array(), 0, block * p),
                    Tensor.ofArray(dt, out.array(), 0, block), op, asking(requested));
            return out;
        }, want);
    }

    private static Case reduce(List<Buf> in, int root, Algorithm requested) {
        Buf sum = sequential(in, ReduceOp.SUM);
        DataType dt = sum.dtype();
        int n = sum.count();
        List<Buf> want = new ArrayList<>(in); // the other ranks' buffers are unchanged
        want.set(root, sum);
        return new Case("reduce " + dt + " x" + n + " to " + root + " asking " + requested, comm -> {
            Buf mine = in.get(comm.rank()).copyOf(0, n);
            comm.reduce(Tensor.ofArray(dt, mine.array(), 0, n), root, ReduceOp.SUM, asking(requested));
            return mine;
        }, want);
    }

    static Stream<Arguments> kindsAndWorlds() {
        Stream.Builder<Arguments> b = Stream.builder();
        for (TransportKind k : TransportKind.values()) {
            for (int world = 2; world <= 5; world++) {
                b.add(Arguments.of(k, world));
            }
        }
        return b.build();
    }

    // ------------------------------------------------------------------ (a), (c): the mode on

    @ParameterizedTest(name = "{0}, {1} ranks")
    @MethodSource("kindsAndWorlds")
    void shouldGiveTheSequentialSumsBitsWhateverTheAlgorithm(TransportKind kind, int world) throws Exception {
        long seed = 0x5EED + world;
        List<Case> cases = new ArrayList<>();
        List<DataType> types = new ArrayList<>(FLOATS);
        if (kind == TransportKind.LOCAL) {
            types.addAll(HALVES);
        }
        for (DataType dt : types) {
            for (int count : COUNTS) {
                List<Buf> in = inputs(dt, count, seed, world);
                for (Algorithm a : ALL_REDUCE_REQUESTS) {
                    cases.add(allReduce(in, ReduceOp.SUM, a));
                }
                if (count == 1001) {
                    cases.add(allReduce(in, ReduceOp.AVG, Algorithm.RING));
                    cases.add(allReduce(in, ReduceOp.AVG, Algorithm.AUTO));
                }
            }
            for (int block : BLOCKS) {
                List<Buf> in = inputs(dt, block * world, seed + 1, world);
                for (Algorithm a : REDUCE_SCATTER_REQUESTS) {
                    cases.add(reduceScatter(in, ReduceOp.SUM, a));
                }
                if (block == 3001) {
                    cases.add(reduceScatter(in, ReduceOp.AVG, Algorithm.AUTO));
                }
            }
            List<Buf> in = inputs(dt, 1001, seed + 2, world);
            for (Algorithm a : REDUCE_REQUESTS) {
                cases.add(reduce(in, world - 1, a));
            }
        }
        if (kind == TransportKind.LOCAL) {
            List<Buf> large = inputs(DataType.FLOAT32, LARGE, seed + 3, world);
            cases.add(allReduce(large, ReduceOp.SUM, Algorithm.AUTO));
            cases.add(allReduce(large, ReduceOp.SUM, Algorithm.RING));
        }
        List<CommunicatorConfig> configs = Collections.nCopies(world, config(true));
        List<String> problems = runCases(communicators(kind, configs), cases);
        assertTrue(String.join("", problems).isEmpty(), () -> kind + ", " + world + " ranks:\n"
                + String.join("", problems));
    }

    /**
     * Deterministic mode set through the environment's variable, on the threads of {@link Jccl#runThreads}: the
     * same bits again, through every layout a tensor can have (an array at an offset, a big-endian direct buffer,
     * part of a coalesced allreduce) and in sub-groups.
     */
    @ParameterizedTest(name = "{0} ranks")
    @org.junit.jupiter.params.provider.ValueSource(ints = {2, 3, 4, 5})
    void shouldKeepTheBitsAcrossLayoutsAndSubGroups(int world) throws Exception {
        Map<String, String> env = new HashMap<>();
        env.put(JcclSettings.DETERMINISTIC_ENV, "1");
        env.put(JcclSettings.TIMEOUT_ENV, Long.toString(TIMEOUT.toMillis()));
        CommunicatorConfig config = JcclSettings.from(env, Map.of("user.home", System.getProperty("user.home"),
                "java.io.tmpdir", System.getProperty("java.io.tmpdir"))).communicatorConfig();
        assertTrue(config.deterministic());
        long seed = 0xFACE + world;
        int n = 1001;
        List<Buf> a = inputs(DataType.FLOAT32, n, seed, world);
        List<Buf> b = inputs(DataType.FLOAT32, 37, seed + 1, world);
        List<Buf> d = inputs(DataType.FLOAT64, 257, seed + 2, world);
        Buf sumA = sequential(a, ReduceOp.SUM);
        Buf sumB = sequential(b, ReduceOp.SUM);
        Buf sumD = sequential(d, ReduceOp.SUM);
        List<Buf> evens = new ArrayList<>();
        List<Buf> odds = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            (r % 2 == 0 ? evens : odds).add(a.get(r));
        }
        Buf sumEvens = sequential(evens, ReduceOp.SUM);
        Buf sumOdds = odds.size() > 0 ? sequential(odds, ReduceOp.SUM) : null;
        List<String> problems = Jccl.runThreads(world, config, comm -> {
            int r = comm.rank();
            List<String> wrong = new ArrayList<>();
            assertEquals(Algorithm.ORDERED, comm.algorithmFor(OpType.ALL_REDUCE, DataType.FLOAT32, n));
            // an array at an offset
            float[] padded = new float[n + 5];
            System.arraycopy(a.get(r).array(), 0, padded, 3, n);
            comm.allReduce(Tensor.of(padded, 3, n), ReduceOp.SUM, asking(Algorithm.TREE));
            check(wrong, "offset array", new Buf(DataType.FLOAT32, padded, 3, n), sumA);
            // a big-endian direct buffer (staged through a copy)
            ByteBuffer bb = ByteBuffer.allocateDirect(n * 4).order(ByteOrder.BIG_ENDIAN);
            a.get(r).writeTo(bb.duplicate().order(ByteOrder.BIG_ENDIAN));
            comm.allReduce(Tensor.of(bb, DataType.FLOAT32), ReduceOp.SUM, CollectiveOptions.DEFAULT);
            Buf fromBuffer = Buf.allocate(DataType.FLOAT32, n);
            fromBuffer.readFrom(bb.duplicate().order(ByteOrder.BIG_ENDIAN));
            check(wrong, "direct buffer", fromBuffer, sumA);
            // a buffer from allocate(): the shared-memory algorithms would read it in place
            Tensor registered = comm.allocate(DataType.FLOAT32, n);
            Buf fromRegistered = Buf.allocate(DataType.FLOAT32, n);
            if (registered.isBuffer()) {
                a.get(r).writeTo(registered.byteBuffer());
                comm.allReduce(registered, ReduceOp.SUM, asking(Algorithm.SHARED_MEMORY));
                fromRegistered.readFrom(registered.byteBuffer());
            } else { // ranks that are threads: an array
                a.get(r).copyTo(new Buf(DataType.FLOAT32, registered.array(), registered.offset(), n), 0);
                comm.allReduce(registered, ReduceOp.SUM, asking(Algorithm.SHARED_MEMORY));
                new Buf(DataType.FLOAT32, registered.array(), registered.offset(), n).copyTo(fromRegistered, 0);
            }
            check(wrong, "allocated buffer", fromRegistered, sumA);
            // two tensors of one coalesced allreduce
            Buf ca = a.get(r).copyOf(0, n);
            Buf cb = b.get(r).copyOf(0, 37);
            comm.allReduceCoalesced(List.of(Tensor.of((float[]) cb.array()), Tensor.of((float[]) ca.array())),
                    ReduceOp.SUM);
            check(wrong, "coalesced, first", cb, sumB);
            check(wrong, "coalesced, second", ca, sumA);
            Buf md = d.get(r).copyOf(0, 257);
            comm.allReduce((double[]) md.array(), ReduceOp.SUM);
            check(wrong, "float64", md, sumD);
            // a sub-group: the even ranks and the odd ones, in parent order
            try (Communicator group = comm.split(r % 2, r)) {
                assertEquals(Algorithm.ORDERED, group.algorithmFor(OpType.REDUCE_SCATTER, DataType.FLOAT32, 7));
                Buf g = a.get(r).copyOf(0, n);
                group.allReduce(Tensor.of((float[]) g.array()), ReduceOp.SUM, asking(Algorithm.RING));
                check(wrong, "sub-group", g, r % 2 == 0 ? sumEvens : sumOdds);
            }
            return String.join("\n", wrong);
        });
        for (String p : problems) {
            assertEquals("", p);
        }
    }

    private static void check(List<String> wrong, String what, Buf got, Buf want) {
        if (!Bufs.bitEqual(got.copyOf(0, got.count()), want)) {
            wrong.add(what + ": element " + firstDifference(got, want) + " differs");
        }
    }

    // ------------------------------------------------------------------ (b): the mode off

    /**
     * Without the mode the ring adds in another order, and with these inputs that changes bits from three ranks
     * on (two ranks add x0 + x1 either way, and addition commutes): so the test above could fail. ORDERED asked
     * for by the call gives the sequential sum's bits with the mode off too.
     */
    @ParameterizedTest(name = "{0} ranks")
    @org.junit.jupiter.params.provider.ValueSource(ints = {3, 4, 5})
    void shouldDifferWithoutTheModeForTheRing(int world) throws Exception {
        long seed = 0xBAD + world;
        for (DataType dt : FLOATS) {
            List<Buf> in = inputs(dt, 1001, seed, world);
            List<Buf> blocks = inputs(dt, 1001 * world, seed + 1, world);
            Case ring = allReduce(in, ReduceOp.SUM, Algorithm.RING);
            Case ringScatter = reduceScatter(blocks, ReduceOp.SUM, Algorithm.RING);
            List<Case> cases = List.of(ring, ringScatter, allReduce(in, ReduceOp.SUM, Algorithm.TREE),
                    allReduce(in, ReduceOp.SUM, Algorithm.HALVING_DOUBLING),
                    allReduce(in, ReduceOp.SUM, Algorithm.ORDERED),
                    reduceScatter(blocks, ReduceOp.SUM, Algorithm.ORDERED));
            List<String> problems = runCases(communicators(TransportKind.LOCAL,
                    Collections.nCopies(world, config(false))), cases);
            boolean scatterDiffers = false;
            for (int r = 0; r < world; r++) {
                String p = problems.get(r);
                assertTrue(p.contains("allReduce " + dt + " x1001 SUM asking RING"), dt + " rank " + r + ": the ring "
                        + "should differ from the sequential sum\n" + p);
                // a block can miss: the ring sums gloo chunk P-1 as (x[P-2] + ... + x0) + x[P-1], on 3 ranks the
                // sequential order
                scatterDiffers |= p.contains("reduceScatter " + dt + " block 1001 SUM asking RING");
                assertFalse(p.contains("asking ORDERED"), dt + " rank " + r + ": ORDERED must not differ\n" + p);
            }
            assertTrue(scatterDiffers, dt + ": the ring reduce_scatter should differ on some rank");
        }
    }

    // ------------------------------------------------------------------ traffic

    /**
     * "An all-to-all of slices followed by an ordered local sum moves the same bytes as a ring": the ordered
     * allreduce sends exactly the ring's bytes and messages on every rank, and receives as many in all (per rank
     * too when the chunks are equal: a rank receives P-1 copies of its own slice instead of P-1 other chunks); the
     * ordered reduce_scatter sends and receives T(P-1)/P bytes in P-1 blocks (of 1 MiB segments), the ring's
     * pass 1 without its boundary fix-up. For chunks that are equal, unequal or empty, and slices of several segments.
     */
    @ParameterizedTest(name = "{0} ranks")
    @org.junit.jupiter.params.provider.ValueSource(ints = {2, 3, 5})
    void shouldMoveTheRingsBytes(int world) throws Exception {
        int[] counts = {0, 2, 4099, 1 << 20, LARGE};
        List<OpType> ops = List.of(OpType.ALL_REDUCE, OpType.REDUCE_SCATTER);
        List<Algorithm> algorithms = List.of(Algorithm.RING, Algorithm.ORDERED);
        // per rank: [count][op][algorithm] = {bytes sent, bytes received, messages sent, messages received}
        List<RankHarness.Outcome<long[][][][]>> out = run(communicators(TransportKind.LOCAL,
                Collections.nCopies(world, config(false))), comm -> {
                    long[][][][] traffic = new long[counts.length][ops.size()][algorithms.size()][];
                    for (int i = 0; i < counts.length; i++) {
                        for (int o = 0; o < ops.size(); o++) {
                            for (int k = 0; k < algorithms.size(); k++) {
                                comm.counters().reset();
                                float[] x = new float[counts[i]];
                                int block = counts[i] / world;
                                if (ops.get(o) == OpType.ALL_REDUCE) {
                                    comm.allReduce(Tensor.of(x), ReduceOp.SUM, asking(algorithms.get(k)));
                                } else {
                                    comm.reduceScatter(Tensor.of(x, 0, block * world), Tensor.of(new float[block]),
                                            ReduceOp.SUM, asking(algorithms.get(k)));
                                }
                                io.jccl.instrument.TrafficCounters c = comm.counters();
                                OpType op = ops.get(o);
                                traffic[i][o][k] = new long[] {c.bytesSent(op), c.bytesReceived(op),
                                    c.get(op, io.jccl.instrument.Counter.MESSAGES_SENT),
                                    c.get(op, io.jccl.instrument.Counter.MESSAGES_RECEIVED)};
                            }
                        }
                    }
                    return traffic;
                });
        for (RankHarness.Outcome<long[][][][]> o : out) {
            assertNull(o.error);
        }
        for (int i = 0; i < counts.length; i++) {
            String at = counts[i] + " floats on " + world + " ranks, ";
            long ringReceived = 0;
            long orderedReceived = 0;
            for (int r = 0; r < world; r++) {
                long[] ring = out.get(r).value[i][0][0];
                long[] ordered = out.get(r).value[i][0][1];
                assertEquals(ring[0], ordered[0], at + "allReduce bytes sent by rank " + r);
                assertEquals(ring[2], ordered[2], at + "allReduce messages sent by rank " + r);
                assertEquals(ring[3], ordered[3], at + "allReduce messages received by rank " + r);
                ringReceived += ring[1];
                orderedReceived += ordered[1];
                long[] scatter = out.get(r).value[i][1][1];
                long t = 4L * (counts[i] / world) * world;
                long segments = Math.max(1, (t / world + (1 << 20) - 1) >> 20); // of at most 1 MiB per block
                long messages = (world - 1) * segments;
                assertEquals(List.of(t * (world - 1) / world, t * (world - 1) / world, messages, messages),
                        List.of(scatter[0], scatter[1], scatter[2], scatter[3]), at + "reduceScatter, rank " + r);
            }
            assertEquals(ringReceived, orderedReceived, at + "allReduce bytes received by all ranks");
        }
    }

    // ------------------------------------------------------------------ (d): ranks that disagree

    /**
     * One rank in deterministic mode, the others not: its floating-point allreduce runs ORDERED and theirs another
     * algorithm (AUTO's, or RING asked for), and every rank fails with an {@code algorithm} mismatch, or is told
     * of it by the rank that found it. Over threads and shm processes (where AUTO takes the shared-memory algorithm)
     * and TCP.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = TransportKind.class, names = {"LOCAL", "SHM", "TCP"})
    void shouldReportARankWhoseModeDiffersAsAnAlgorithmMismatch(TransportKind kind) throws Exception {
        for (Algorithm others : List.of(Algorithm.AUTO, Algorithm.RING)) {
            List<CommunicatorConfig> configs = new ArrayList<>();
            for (int r = 0; r < 4; r++) {
                CommunicatorConfig c = config(r == 2);
                configs.add(others == Algorithm.AUTO ? c : c.withAlgorithm(OpType.ALL_REDUCE, others));
            }
            List<RankHarness.Outcome<Object>> out = run(communicators(kind, configs), comm -> {
                comm.allReduce(new float[100], ReduceOp.SUM);
                return null;
            });
            int mismatches = 0;
            for (int r = 0; r < out.size(); r++) {
                Throwable e = out.get(r).error;
                int rank = r;
                assertNotNull(e, () -> kind + ", others " + others + ": rank " + rank + " returned normally");
                if (e instanceof CollectiveMismatchException) {
                    CollectiveMismatchException m = (CollectiveMismatchException) e;
                    assertEquals("algorithm", m.field(), m.getMessage());
                    assertTrue(m.localValue().equals("ORDERED") || m.peerValue().equals("ORDERED"), m.getMessage());
                    mismatches++;
                } else {
                    PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, e, () -> "rank " + rank
                            + ": " + e);
                    assertTrue(a.reason().contains("mismatch") && a.reason().contains("algorithm"), a.getMessage());
                }
            }
            assertTrue(mismatches >= 1, "nobody detected the mismatch");
        }
    }

    /** Integer types keep their algorithm in deterministic mode (they are exact in any order): no mismatch. */
    @Test
    void shouldLeaveIntegerReductionsAlone() throws Exception {
        List<CommunicatorConfig> configs = List.of(config(true), config(false), config(true));
        List<RankHarness.Outcome<int[]>> out = run(communicators(TransportKind.LOCAL, configs), comm -> {
            assertNotEquals(Algorithm.ORDERED, comm.algorithmFor(OpType.ALL_REDUCE, DataType.INT32, 5));
            assertNotEquals(Algorithm.ORDERED, comm.algorithmFor(OpType.BROADCAST, DataType.FLOAT32, 5));
            int[] x = {comm.rank(), 1, 2, 3, -comm.rank()};
            comm.allReduce(Tensor.of(x), ReduceOp.SUM);
            return x;
        });
        for (RankHarness.Outcome<int[]> o : out) {
            assertNull(o.error);
            org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {3, 3, 6, 9, -3}, o.value);
        }
    }

    // ------------------------------------------------------------------ the switch

    @Test
    void shouldReadTheVariableAndCarryTheModeThroughTheConfig() {
        Map<String, String> home = Map.of("user.home", "/home/u", "java.io.tmpdir", "/tmp");
        assertFalse(JcclSettings.from(Map.of(), home).deterministic());
        for (String on : new String[] {"1", " true ", "TRUE"}) {
            assertTrue(JcclSettings.from(Map.of("JCCL_DETERMINISTIC", on), home).deterministic(), on);
        }
        for (String off : new String[] {"0", "false", " "}) {
            assertFalse(JcclSettings.from(Map.of("JCCL_DETERMINISTIC", off), home).deterministic(), off);
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> JcclSettings.from(Map.of("JCCL_DETERMINISTIC", "yes"), home));
        assertEquals("JCCL_DETERMINISTIC must be 1 or 0 (or true or false), got 'yes'", e.getMessage());
        CommunicatorConfig c = JcclSettings.from(Map.of("JCCL_DETERMINISTIC", "1"), home).communicatorConfig();
        assertTrue(c.deterministic());
        // every with... keeps it
        assertTrue(c.withTimeout(Duration.ofSeconds(5)).withTrace(null).withAlgorithm(Algorithm.RING)
                .withTuneParameters("").deterministic());
        assertFalse(c.withDeterministic(false).deterministic());
        assertTrue(CommunicatorConfig.of(JcclSettings.defaults()).withDeterministic(true).deterministic());
    }

    /** The mode overrides what was asked for, but an algorithm the operation does not have is still refused. */
    @Test
    void shouldStillRefuseAnAlgorithmTheOperationLacks() throws Exception {
        List<RankHarness.Outcome<Object>> out = run(communicators(TransportKind.LOCAL,
                Collections.nCopies(2, config(true))), comm -> {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> comm.allReduce(Tensor.of(new float[4]), ReduceOp.SUM, asking(Algorithm.BRUCK)));
                    assertTrue(e.getMessage().contains("has no BRUCK algorithm"), e.getMessage());
                    assertEquals(Algorithm.ORDERED, comm.algorithmFor(OpType.REDUCE, DataType.FLOAT64, 9));
                    assertEquals(Algorithm.PAIRWISE, comm.algorithmFor(OpType.ALL_TO_ALL, DataType.FLOAT32, 9));
                    return null;
                });
        for (RankHarness.Outcome<Object> o : out) {
            assertNull(o.error);
        }
    }
}
