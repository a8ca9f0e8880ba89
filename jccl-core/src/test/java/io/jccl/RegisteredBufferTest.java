package io.jccl;

import io.jccl.buffer.Buf;
import io.jccl.buffer.Bufs;
import io.jccl.reference.InputGenerator;
import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.reference.ReferenceModel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Buffers from {@link Communicator#allocate}: on shm they live in shared memory and the shared-memory allreduce reads
 * them in place; on every transport they are ordinary tensors to every collective.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RegisteredBufferTest {

    private static void fill(Tensor t, Buf values) {
        ByteBuffer b = t.byteBuffer();
        if (b == null) {
            throw new AssertionError("expected a buffer tensor");
        }
        values.writeTo(b);
    }

    private static Buf read(Tensor t) {
        Buf out = Buf.allocate(t.dtype(), t.count());
        out.readFrom(t.byteBuffer());
        return out;
    }

    @ParameterizedTest
    @EnumSource(value = DataType.class, names = {"FLOAT32", "FLOAT16", "INT64", "BFLOAT16"})
    void sharedMemoryAllReduceOnRegisteredBuffersShouldEqualTheRankOrderModel(DataType dtype) throws Exception {
        int world = 4;
        int count = 20_011; // above the in-place threshold for every type, not a multiple of the world size
        for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX}) {
            List<Buf> in = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                in.add(InputGenerator.generate(dtype, op, count, 11, r));
            }
            Buf expected = ReferenceModel.allReduceInRankOrder(in, op);
            List<RankHarness.Outcome<Boolean>> out = RankHarness.run(TransportKind.SHM, world, Duration.ofSeconds(30),
                    Algorithm.SHARED_MEMORY, comm -> {
                        Tensor t = comm.allocate(dtype, count);
                        assertTrue(t.isBuffer() && t.byteBuffer().isDirect());
                        boolean ok = true;
                        for (int i = 0; i < 3; i++) { // the same buffer again: reused, and results stay right
                            fill(t, in.get(comm.rank()));
                            comm.allReduce(t, op);
                            ok &= Bufs.bitEqual(read(t), expected);
                        }
                        // read in place: nothing was written into an exchange buffer
                        ok &= comm.counters().bytesSent(OpType.ALL_REDUCE) == 0
                                && comm.counters().bytesReceived(OpType.ALL_REDUCE) > 0;
                        return ok;
                    });
            for (int r = 0; r < world; r++) {
                assertNull(out.get(r).error, String.valueOf(out.get(r).error));
                assertTrue(out.get(r).value, "rank " + r + " " + dtype + " " + op);
            }
        }
    }

    /**
     * A correct program may pass a buffer from {@code allocate} on some ranks and an array on others in the same
     * call: the shared-memory allreduce must give every rank the rank-order result, whichever way each rank's
     * tensor is read.
     */
    @ParameterizedTest(name = "registered on ranks {0}, {1} elements, exchange buffers of {2} bytes")
    @CsvSource({"0, 20011, 8192", "'1,2,3', 20011, 8192", "'0,2', 20011, 1048576", "'1,3', 1100003, 1048576",
        "'0,1,2', 300007, 65536"}) // 8 KiB: rounds reduced whole; 64 KiB and 1 MiB: in slices, 1 to 19 rounds
    void registeredBuffersOnSomeRanksAndArraysOnOthersShouldAgree(String registeredRanks, int count, int arenaBytes)
            throws Exception {
        int world = 4;
        java.util.Set<Integer> onRanks = new java.util.HashSet<>();
        for (String r : registeredRanks.split(",")) {
            onRanks.add(Integer.parseInt(r.trim()));
        }
        DataType dtype = DataType.FLOAT32;
        for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX}) {
            List<Buf> in = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                in.add(InputGenerator.generate(dtype, op, count, 13, r));
            }
            Buf expected = ReferenceModel.allReduceInRankOrder(in, op);
            List<Communicator> comms = new ArrayList<>();
            CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(30))
                    .withAlgorithm(Algorithm.SHARED_MEMORY);
            for (io.jccl.transport.Transport t : TransportKind.connectShm(world, arenaBytes)) {
                comms.add(new DefaultCommunicator(t, config));
            }
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(world);
            try {
                List<java.util.concurrent.Future<String>> futures = new ArrayList<>();
                for (Communicator comm : comms) {
                    futures.add(pool.submit(() -> mixedCalls(comm, onRanks.contains(comm.rank()), in, expected, op)));
                }
                for (int r = 0; r < world; r++) {
                    assertEquals("", futures.get(r).get(120, TimeUnit.SECONDS), "rank " + r + " " + op);
                }
            } finally {
                pool.shutdownNow();
                TransportKind.closeAll(comms);
            }
        }
    }

    /**
     * Three allreduces of this rank's input, from a buffer of {@code allocate} or an array, each checked against
     * {@code expected}; then a barrier, a broadcast from rank 1 and a small allreduce, which must not mistake the
     * counters the mixed calls published. What went wrong, or "".
     */
    private static String mixedCalls(Communicator comm, boolean registered, List<Buf> in, Buf expected, ReduceOp op) {
        DataType dtype = expected.dtype();
        int count = expected.count();
        Tensor t = registered ? comm.allocate(dtype, count) : Tensor.of(new float[count]);
        for (int i = 0; i < 3; i++) {
            Buf mine = in.get(comm.rank());
            if (registered) {
                fill(t, mine);
            } else {
                mine.copyTo(new Buf(dtype, t.array(), 0, count), 0);
            }
            comm.allReduce(t, op);
            Buf got = registered ? read(t) : new Buf(dtype, t.array(), 0, count);
            if (!Bufs.bitEqual(got, expected)) {
                return "call " + i + ": not the rank-order result";
            }
        }
        comm.barrier();
        float[] b = {comm.rank(), comm.rank() * 2};
        comm.broadcast(Tensor.of(b), 1);
        float[] x = {comm.rank() + 1};
        comm.allReduce(Tensor.of(x), ReduceOp.SUM);
        if (b[0] != 1 || b[1] != 2 || x[0] != comm.size() * (comm.size() + 1) / 2f) {
            return "after the mixed calls: broadcast " + java.util.Arrays.toString(b) + ", allreduce " + x[0];
        }
        return "";
    }

    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void allocatedTensorsShouldWorkWithEveryCollectiveOnEveryTransport(TransportKind kind) throws Exception {
        int world = 3;
        List<RankHarness.Outcome<Boolean>> out = RankHarness.run(kind, world, Duration.ofSeconds(30), comm -> {
            Tensor small = comm.allocate(DataType.FLOAT32, 5);
            Tensor big = comm.allocate(DataType.FLOAT32, 30_000);
            float[] ones = new float[30_000];
            java.util.Arrays.fill(ones, comm.rank() + 1);
            boolean ok = true;
            for (Tensor t : new Tensor[] {small, big}) {
                Buf b = new Buf(DataType.FLOAT32, ones, 0, t.count());
                if (t.isBuffer()) {
                    fill(t, b);
                } else {
                    b.copyTo(new Buf(t.dtype(), t.array(), t.offset(), t.count()), 0);
                }
                comm.allReduce(t, ReduceOp.SUM);
                Buf r = t.isBuffer() ? read(t) : new Buf(t.dtype(), t.array(), t.offset(), t.count());
                for (int i = 0; i < r.count(); i++) {
                    ok &= ((float[]) r.array())[r.offset() + i] == 6f;
                }
                // distinct values on every rank, then rank 1's everywhere
                float[] mine = new float[t.count()];
                for (int i = 0; i < mine.length; i++) {
                    mine[i] = 100 * (comm.rank() + 1) + i % 97;
                }
                Buf m = new Buf(DataType.FLOAT32, mine, 0, t.count());
                if (t.isBuffer()) {
                    fill(t, m);
                } else {
                    m.copyTo(new Buf(t.dtype(), t.array(), t.offset(), t.count()), 0);
                }
                comm.broadcast(t, 1);
                Buf got = t.isBuffer() ? read(t) : new Buf(t.dtype(), t.array(), t.offset(), t.count());
                for (int i = 0; i < got.count(); i++) {
                    ok &= ((float[]) got.array())[got.offset() + i] == 200 + i % 97;
                }
            }
            return ok;
        });
        for (RankHarness.Outcome<Boolean> o : out) {
            assertNull(o.error, String.valueOf(o.error));
            assertTrue(o.value);
        }
    }

    @Test
    void aFullRegisteredRegionShouldBeAClearError() throws Exception {
        List<RankHarness.Outcome<String>> out = RankHarness.run(TransportKind.SHM, 2, Duration.ofSeconds(30), comm -> {
            comm.allocate(DataType.INT8, 16 << 20); // the whole region of the test transport
            return assertThrows(IllegalArgumentException.class, () -> comm.allocate(DataType.INT8, 1)).getMessage();
        });
        for (RankHarness.Outcome<String> o : out) {
            assertNull(o.error);
            assertTrue(o.value.contains("registered region") && o.value.contains("JCCL_SHM_REGISTERED_BYTES"),
                    o.value);
        }
        assertEquals(2, out.size());
    }
}
