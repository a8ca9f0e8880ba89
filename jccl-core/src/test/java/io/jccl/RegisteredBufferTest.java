package io.jccl;

import io.jccl.buffer.Buf;
import io.jccl.buffer.Bufs;
import io.jccl.reference.InputGenerator;
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
    @ParameterizedTest(name = "registered on ranks {0}, {1} elements")
    @CsvSource({"0, 20011", "'1,2,3', 20011", "'0,2', 20011", "'1,3', 1100003"}) // 1,100,003: 2 rounds of 4 MiB
    void registeredBuffersOnSomeRanksAndArraysOnOthersShouldAgree(String registeredRanks, int count)
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
            List<RankHarness.Outcome<Boolean>> out = RankHarness.run(TransportKind.SHM, world, Duration.ofSeconds(30),
                    Algorithm.SHARED_MEMORY, comm -> {
                        boolean registered = onRanks.contains(comm.rank());
                        Tensor t = registered ? comm.allocate(dtype, count) : Tensor.of(new float[count]);
                        boolean ok = true;
                        for (int i = 0; i < 3; i++) {
                            Buf mine = in.get(comm.rank());
                            if (registered) {
                                fill(t, mine);
                            } else {
                                mine.copyTo(new Buf(dtype, t.array(), 0, count), 0);
                            }
                            comm.allReduce(t, op);
                            Buf got = registered ? read(t) : new Buf(dtype, t.array(), 0, count);
                            ok &= Bufs.bitEqual(got, expected);
                        }
                        return ok;
                    });
            for (int r = 0; r < world; r++) {
                assertNull(out.get(r).error, String.valueOf(out.get(r).error));
                assertTrue(out.get(r).value, "rank " + r + " " + op + ": not the rank-order result");
            }
        }
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
                comm.broadcast(t, 1);
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
