package io.jccl;

import io.jccl.buffer.Buf;
import io.jccl.buffer.Bufs;
import io.jccl.reference.InputGenerator;
import io.jccl.reference.ReferenceModel;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * In-place allgather and reduce_scatter, as ZeRO and FSDP call them (NCCL's convention): the allgather's input is
 * this rank's block of its output, the reduce_scatter's output is this rank's block of its input. Small and large
 * (the shared-memory algorithms switch to reading buffers in place above 16 KiB), every transport and algorithm.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class InPlaceTest {

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void allGatherAndReduceScatterInPlace(TransportKind kind, Algorithm algorithm) throws Exception {
        int world = 4;
        for (int block : new int[] {3, 9_000}) {
            List<Buf> in = inputs(world, block);
            Buf all = sums(in, algorithm);
            List<RankHarness.Outcome<Boolean>> out = RankHarness.run(kind, world, Duration.ofSeconds(30), algorithm,
                    comm -> {
                        int r = comm.rank();
                        // reduce_scatter: output = block r of the input
                        float[] x = ((float[]) in.get(r).array()).clone();
                        comm.reduceScatter(Tensor.of(x), Tensor.of(x, r * block, block), ReduceOp.SUM);
                        boolean ok = Bufs.bitEqual(new Buf(DataType.FLOAT32, x, r * block, block),
                                ReferenceModel.block(all, world, r));
                        // allgather: input = block r of the output
                        float[] y = new float[block * world];
                        System.arraycopy(in.get(r).array(), 0, y, r * block, block);
                        comm.allGather(Tensor.of(y, r * block, block), Tensor.of(y));
                        for (int q = 0; q < world; q++) {
                            ok &= Bufs.bitEqual(new Buf(DataType.FLOAT32, y, q * block, block),
                                    in.get(q).copyOf(0, block));
                        }
                        return ok;
                    });
            for (int r = 0; r < world; r++) {
                assertNull(out.get(r).error, String.valueOf(out.get(r).error));
                assertTrue(out.get(r).value, kind + " " + algorithm + " block " + block + " rank " + r);
            }
        }
    }

    /**
     * Input and output sharing memory in another layout than NCCL's in-place one: every rank's allgather input is the
     * output's first block, and its reduce_scatter output the input's first block. Over threads the shared-memory
     * algorithms read a peer's input in place while that peer wrote its output over it: ranks got another rank's
     * block, silently. Such an input is now copied first; every algorithm and transport gives the exact blocks.
     */
    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void inputAndOutputSharingMemoryInAnotherLayoutGiveTheExactBlocks(TransportKind kind, Algorithm algorithm)
            throws Exception {
        int world = 4;
        int block = 9_000;
        List<Buf> in = inputs(world, block);
        Buf all = sums(in, algorithm);
        List<RankHarness.Outcome<Boolean>> out = RankHarness.run(kind, world, Duration.ofSeconds(30), algorithm,
                comm -> {
                    int r = comm.rank();
                    float[] y = new float[block * world];
                    System.arraycopy(in.get(r).array(), 0, y, 0, block); // this rank's input in block 0
                    comm.allGather(Tensor.of(y, 0, block), Tensor.of(y));
                    boolean ok = true;
                    for (int q = 0; q < world; q++) {
                        ok &= Bufs.bitEqual(new Buf(DataType.FLOAT32, y, q * block, block), in.get(q).copyOf(0, block));
                    }
                    float[] x = ((float[]) in.get(r).array()).clone();
                    comm.reduceScatter(Tensor.of(x), Tensor.of(x, 0, block), ReduceOp.SUM); // into block 0
                    return ok && Bufs.bitEqual(new Buf(DataType.FLOAT32, x, 0, block),
                            ReferenceModel.block(all, world, r));
                });
        for (int r = 0; r < world; r++) {
            assertNull(out.get(r).error, String.valueOf(out.get(r).error));
            assertTrue(out.get(r).value, kind + " " + algorithm + " rank " + r);
        }
    }

    /** Each rank's input of {@code world} blocks of {@code block} floats. */
    private static List<Buf> inputs(int world, int block) {
        List<Buf> in = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            in.add(InputGenerator.generate(DataType.FLOAT32, ReduceOp.SUM, block * world, 3, r));
        }
        return in;
    }

    /** The sums {@code algorithm} gives, bit for bit (the shared-memory one adds in rank order). */
    private static Buf sums(List<Buf> in, Algorithm algorithm) {
        return algorithm == Algorithm.SHARED_MEMORY ? ReferenceModel.allReduceInRankOrder(in, ReduceOp.SUM)
                : ReferenceModel.allReduce(in, ReduceOp.SUM);
    }

    /** What counts as an input that overlaps its output (an all-to-all copies such an input first). */
    @org.junit.jupiter.api.Test
    void tensorsOverlapWhereTheyShareElements() {
        float[] a = new float[10];
        assertTrue(Tensor.of(a).overlaps(Tensor.of(a)));
        assertTrue(Tensor.ofArray(DataType.FLOAT32, a, 2, 4).overlaps(Tensor.ofArray(DataType.FLOAT32, a, 5, 5)));
        org.junit.jupiter.api.Assertions.assertFalse(Tensor.ofArray(DataType.FLOAT32, a, 0, 5)
                .overlaps(Tensor.ofArray(DataType.FLOAT32, a, 5, 5)));
        org.junit.jupiter.api.Assertions.assertFalse(Tensor.of(a).overlaps(Tensor.of(new float[10])));
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocateDirect(40);
        assertTrue(Tensor.of(b, DataType.FLOAT32).overlaps(Tensor.of(b, DataType.FLOAT32))); // one object, twice
        java.nio.ByteBuffer low = b.duplicate().limit(20);
        java.nio.ByteBuffer high = b.duplicate().position(20);
        org.junit.jupiter.api.Assertions.assertFalse(Tensor.of(low, DataType.FLOAT32)
                .overlaps(Tensor.of(high, DataType.FLOAT32))); // two objects: apart (their addresses are unknown)
        org.junit.jupiter.api.Assertions.assertFalse(Tensor.of(b, DataType.FLOAT32).overlaps(Tensor.of(a)));
        org.junit.jupiter.api.Assertions.assertFalse(Tensor.of(a).overlaps(Tensor.of(b, DataType.FLOAT32)));
        b.position(20); // the same object, moved after the first tensor was made: the ranges are apart
        Tensor second = Tensor.of(b, DataType.FLOAT32);
        b.position(0).limit(20);
        org.junit.jupiter.api.Assertions.assertFalse(Tensor.of(b, DataType.FLOAT32).overlaps(second));
    }
}
