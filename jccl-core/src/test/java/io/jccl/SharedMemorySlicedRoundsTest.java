package io.jccl;

import io.jccl.buffer.Buf;
import io.jccl.buffer.Bufs;
import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.reference.InputGenerator;
import io.jccl.reference.ReferenceModel;
import io.jccl.transport.Transport;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shared-memory algorithms of ranks that are processes (or, here, shm transports in one JVM) where a call's
 * rounds are split among the ranks or pipelined: the allreduce's rounds above {@code SharedMemoryAllReduce.SMALL_BYTES}
 * and the reduce's, where each rank reduces one slice, reading its own part from its own array and the others'
 * from their exchange buffers; and the broadcast above {@code SharedMemoryBroadcast.PIPELINED_BYTES}, in rounds of
 * a quarter of the call. A reduction must be the rank-order one ((x0 op x1) op x2 ...) bit for bit on every rank,
 * including where the operator does not commute bit for bit: MIN and MAX keep the accumulated value on a NaN or a
 * tie of -0.0 and 0.0; a reduce leaves every non-root's buffer as it was. The other shm suites use exchange buffers
 * of 8 KiB, whose allreduce rounds are all reduced whole and whose broadcasts are rounds of one buffer, so this one
 * uses 64 KiB.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SharedMemorySlicedRoundsTest {
    private static final int ARENA_BYTES = 64 << 10;

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 4})
    void slicedRoundsShouldGiveTheRankOrderReductionBitForBit(int world) throws Exception {
        // 64 KiB buffers: a rank's slice fits one 32 KiB block of reduceOwnSlice; 320 KiB: several blocks and a
        // partial last one (and the default 4 MiB buffers' case of slices of many blocks)
        for (int arenaBytes : new int[] {ARENA_BYTES, 320 << 10}) {
            List<Communicator> comms = communicators(world, arenaBytes);
            ExecutorService pool = Executors.newFixedThreadPool(world);
            try {
                // 40,001 floats: with 64 KiB buffers two sliced rounds and a third of 28 KiB, with 320 KiB one;
                // 17,000: a sliced round of 64 KiB and a last one of 2.4 KiB reduced whole, or one of 68 KB
                for (int count : new int[] {40_001, 17_000}) {
                    for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.PRODUCT,
                            ReduceOp.AVG}) {
                        check(comms, pool, DataType.FLOAT32, op, count);
                    }
                    check(comms, pool, DataType.FLOAT64, ReduceOp.MIN, count / 2);
                    check(comms, pool, DataType.FLOAT16, ReduceOp.MAX, count);
                    check(comms, pool, DataType.INT32, ReduceOp.SUM, count);
                    check(comms, pool, DataType.INT8, ReduceOp.SUM, count * 2);
                    broadcast(comms, pool, count, 0);
                    broadcast(comms, pool, count, world - 1);
                }
            } finally {
                pool.shutdownNow();
                TransportKind.closeAll(comms);
            }
        }
    }

    /**
     * Calls back to back, no rank waiting for the others between them: an eager root (broadcast, reduce) goes on to
     * its next call while the others still copy out of its exchange buffer, which it must not rewrite before they
     * are done. Every rank's results against the references.
     */
    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void callsBackToBackShouldNotOverwriteWhatPeersStillRead(int world) throws Exception {
        List<Communicator> comms = communicators(world, ARENA_BYTES);
        ExecutorService pool = Executors.newFixedThreadPool(world);
        int big = 100_003; // pipelined broadcast rounds, sliced allreduce rounds
        int small = 1_000; // one eager round
        try {
            List<List<Buf>> inputs = new ArrayList<>();
            for (int k = 0; k < 4; k++) {
                List<Buf> in = new ArrayList<>();
                for (int r = 0; r < world; r++) {
                    in.add(InputGenerator.generate(DataType.FLOAT32, ReduceOp.SUM, k % 2 == 0 ? big : small, 20 + k,
                            r));
                }
                inputs.add(in);
            }
            List<Future<List<float[]>>> got = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                Communicator c = comms.get(r);
                int rank = r;
                got.add(pool.submit(() -> {
                    List<float[]> out = new ArrayList<>();
                    for (int round = 0; round < 3; round++) {
                        float[] b1 = ((float[]) inputs.get(0).get(rank).array()).clone();
                        c.broadcast(Tensor.of(b1), 0);
                        float[] s1 = ((float[]) inputs.get(1).get(rank).array()).clone();
                        c.reduce(Tensor.of(s1), world - 1, ReduceOp.SUM);
                        float[] a1 = ((float[]) inputs.get(2).get(rank).array()).clone();
                        c.allReduce(Tensor.of(a1), ReduceOp.SUM);
                        float[] b2 = ((float[]) inputs.get(3).get(rank).array()).clone();
                        c.broadcast(Tensor.of(b2), world - 1);
                        out.add(b1);
                        out.add(s1);
                        out.add(a1);
                        out.add(b2);
                    }
                    return out;
                }));
            }
            for (int r = 0; r < world; r++) {
                List<float[]> out = got.get(r).get(60, TimeUnit.SECONDS);
                Buf[] want = {inputs.get(0).get(0),
                        r == world - 1 ? ReferenceModel.allReduceInRankOrder(inputs.get(1), ReduceOp.SUM)
                                : inputs.get(1).get(r),
                        ReferenceModel.allReduceInRankOrder(inputs.get(2), ReduceOp.SUM),
                        inputs.get(3).get(world - 1)};
                String[] what = {"broadcast from 0", "reduce to " + (world - 1), "allreduce",
                        "broadcast from " + (world - 1)};
                for (int i = 0; i < out.size(); i++) {
                    assertTrue(Bufs.bitEqual(new Buf(DataType.FLOAT32, out.get(i), 0, out.get(i).length),
                            want[i % 4]), world + " ranks, " + what[i % 4] + " #" + (i / 4) + ": rank " + r
                            + " got something else");
                }
            }
        } finally {
            pool.shutdownNow();
            TransportKind.closeAll(comms);
        }
    }

    /**
     * The allgather of inputs too large to stay in the cache between their two copies (into the exchange buffer and
     * into this rank's block of the output), which go in pieces: 4 MiB exchange buffers, inputs of 2.4 MB (one
     * round) and 4.4 MB (two).
     */
    @ParameterizedTest
    @ValueSource(ints = {2, 3})
    void largeAllGatherShouldGiveEveryRanksInput(int world) throws Exception {
        List<Communicator> comms = communicators(world, 4 << 20);
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            for (int count : new int[] {600_001, 1_100_000}) {
                List<float[]> in = new ArrayList<>();
                float[] want = new float[count * world];
                for (int r = 0; r < world; r++) {
                    in.add((float[]) InputGenerator.generate(DataType.FLOAT32, null, count, 9, r).array());
                    System.arraycopy(in.get(r), 0, want, r * count, count);
                }
                List<Future<float[]>> got = new ArrayList<>();
                for (int r = 0; r < world; r++) {
                    Communicator c = comms.get(r);
                    float[] input = in.get(r);
                    got.add(pool.submit(() -> {
                        float[] out = new float[count * world];
                        c.allGather(Tensor.of(input), Tensor.of(out));
                        return out;
                    }));
                }
                for (int r = 0; r < world; r++) {
                    assertTrue(java.util.Arrays.equals(got.get(r).get(60, TimeUnit.SECONDS), want), world
                            + " ranks, allgather of " + count + " floats each: rank " + r + " got something else");
                }
            }
        } finally {
            pool.shutdownNow();
            TransportKind.closeAll(comms);
        }
    }

    /** {@code world} shm communicators in this JVM with exchange buffers of {@code arenaBytes}, SHARED_MEMORY throughout. */
    private static List<Communicator> communicators(int world, int arenaBytes) {
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(30))
                .withAlgorithm(Algorithm.SHARED_MEMORY);
        List<Communicator> comms = new ArrayList<>();
        for (Transport t : TransportKind.connectShm(world, arenaBytes)) {
            comms.add(new DefaultCommunicator(t, config));
        }
        return comms;
    }

    private static void check(List<Communicator> comms, ExecutorService pool, DataType dt, ReduceOp op, int count)
            throws Exception {
        check(comms, pool, dt, op, count, -1);
        check(comms, pool, dt, op, count, 0);
        check(comms, pool, dt, op, count, comms.size() - 1);
    }

    /** An allreduce ({@code root} < 0) or a reduce to {@code root}. */
    private static void check(List<Communicator> comms, ExecutorService pool, DataType dt, ReduceOp op, int count,
                              int root) throws Exception {
        int world = comms.size();
        List<Buf> in = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            Buf b = InputGenerator.generate(dt, op, count, 11, r);
            specials(b, r, op == ReduceOp.MIN || op == ReduceOp.MAX);
            in.add(b);
        }
        Buf want = ReferenceModel.allReduceInRankOrder(in, op);
        List<Future<Buf>> got = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            Communicator c = comms.get(r);
            Buf mine = in.get(r).copyOf(0, count);
            got.add(pool.submit(() -> {
                if (root < 0) {
                    c.allReduce(tensor(mine), op);
                } else {
                    c.reduce(tensor(mine), root, op);
                }
                return mine;
            }));
        }
        String call = world + " ranks, " + dt + " " + op + " x " + count + (root < 0 ? ", allreduce" : ", reduce to "
                + root);
        for (int r = 0; r < world; r++) {
            Buf result = got.get(r).get(60, TimeUnit.SECONDS);
            Buf expected = root < 0 || r == root ? want : in.get(r);
            assertTrue(Bufs.bitEqual(result, expected), call + ": rank " + r + " differs from "
                    + (expected == want ? "the rank-order reduction" : "its input") + " at element "
                    + firstDifference(result, expected));
        }
    }

    /** A broadcast from {@code root} in pipelined rounds (a quarter of the call each): every rank gets the root's. */
    private static void broadcast(List<Communicator> comms, ExecutorService pool, int count, int root)
            throws Exception {
        int world = comms.size();
        List<Future<float[]>> got = new ArrayList<>();
        float[] want = (float[]) InputGenerator.generate(DataType.FLOAT32, null, count, 5, root).array();
        for (int r = 0; r < world; r++) {
            Communicator c = comms.get(r);
            float[] mine = r == root ? want.clone() : new float[count];
            got.add(pool.submit(() -> {
                c.broadcast(Tensor.of(mine), root);
                return mine;
            }));
        }
        for (int r = 0; r < world; r++) {
            assertTrue(java.util.Arrays.equals(got.get(r).get(60, TimeUnit.SECONDS), want), world + " ranks, "
                    + "broadcast of " + count + " floats from " + root + ": rank " + r + " differs from the root's");
        }
    }

    /**
     * Values whose order the reduction shows, at the same elements on every rank: signed zeros (every 7th element:
     * 0.0 on even ranks, -0.0 on odd ones, so MIN and MAX meet a tie of -0.0 and 0.0) and NaNs (every 7th element
     * from the 1st: on one rank in three, so a NaN meets numbers and other NaNs). Where {@code payloads}, each rank's
     * NaN has a payload of its own, which MIN and MAX keep or drop by the order of the reduction. The arithmetic
     * operators get the one canonical NaN: which operand's payload a sum or product of two NaNs carries is not
     * Java's to say, and the JIT may swap a commutative operation's operands (JDK 25 did, in a first version of
     * this test).
     */
    private static void specials(Buf b, int rank, boolean payloads) {
        int n = b.count();
        for (int i = 0; i < n; i++) {
            boolean zero = i % 7 == 0;
            boolean nan = i % 7 == 1 && (i / 7 + rank) % 3 == 0;
            if (!zero && !nan) {
                continue;
            }
            if (b.dtype() == DataType.FLOAT32) {
                ((float[]) b.array())[i] = zero ? (rank % 2 == 0 ? 0.0f : -0.0f)
                        : Float.intBitsToFloat(0x7fc00000 | (payloads ? rank + 1 : 0));
            } else if (b.dtype() == DataType.FLOAT64) {
                ((double[]) b.array())[i] = zero ? (rank % 2 == 0 ? 0.0 : -0.0)
                        : Double.longBitsToDouble(0x7ff8000000000000L | (payloads ? rank + 1 : 0));
            } else if (b.dtype() == DataType.FLOAT16) {
                ((short[]) b.array())[i] = zero ? (short) (rank % 2 == 0 ? 0 : 0x8000)
                        : (short) (0x7e00 | (payloads ? rank + 1 : 0));
            }
        }
    }

    private static Tensor tensor(Buf b) {
        switch (b.dtype()) {
            case FLOAT32: return Tensor.of((float[]) b.array());
            case FLOAT64: return Tensor.of((double[]) b.array());
            case INT32: return Tensor.of((int[]) b.array());
            case FLOAT16: return Tensor.of((short[]) b.array(), DataType.FLOAT16);
            case INT8: return Tensor.of((byte[]) b.array(), DataType.INT8);
            default: throw new AssertionError(b.dtype());
        }
    }

    private static int firstDifference(Buf a, Buf b) {
        for (int i = 0; i < a.count(); i++) {
            if (!Bufs.bitEqual(a.copyOf(i, 1), b.copyOf(i, 1))) {
                return i;
            }
        }
        return -1;
    }
}
