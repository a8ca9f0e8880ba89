package io.jccl.pipeline;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The cost model takes only finite parameters of 0 or more. {@code jccl tune --large 16G} divided by a buffer of 0
 * bytes and wrote {@code Infinity} as a beta, which every later AUTO call read without a word.
 */
class CostModelTest {

    @Test
    void aTuningFileWithAnInfiniteOrNegativeValueIsRefusedNamingIt(@TempDir Path dir) throws Exception {
        for (String bad : new String[] {"Infinity", "-Infinity", "NaN", "-0.5"}) {
            Path file = Files.writeString(dir.resolve("tune.properties"),
                    "shm.link.alpha_us=9.5\nshm.link.beta_us_per_byte=" + bad + "\n");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CostModel.load(file), bad);
            assertEquals("cannot read the tuning file " + file + ": shm.link.beta_us_per_byte=" + bad
                    + " is not a finite number of 0 or more", e.getMessage());
            IllegalArgumentException p = assertThrows(IllegalArgumentException.class,
                    () -> CostModel.parse("tcp.link.alpha_us=" + bad + "\n"), bad);
            assertTrue(p.getMessage().contains("tcp.link.alpha_us=" + bad + " is not a finite number"), p.getMessage());
        }
        Path garbage = Files.writeString(dir.resolve("garbage.properties"), "shm.link.alpha_us=fast\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CostModel.load(garbage));
        assertEquals("cannot read the tuning file " + garbage + ": shm.link.alpha_us=fast is not a number",
                e.getMessage());
    }

    /** What {@code jccl tune} reads before it rewrites the file: the bad value left out and said, the rest kept. */
    @Test
    void tuningAgainDropsABadValueAndKeepsTheOthers(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("tune.properties"),
                "shm.link.alpha_us=9.5\nshm.link.beta_us_per_byte=Infinity\n");
        java.util.List<String> said = new java.util.ArrayList<>();
        CostModel m = CostModel.load(file, said::add);
        assertEquals(java.util.List.of("shm.link.beta_us_per_byte=Infinity is not a finite number of 0 or more"), said);
        assertEquals(9.5, m.link("shm")[0], 0);
        assertEquals(CostModel.defaults().link("shm")[1], m.link("shm")[1], 0);
    }

    @Test
    void measuredParametersMustBeFinite() {
        CostModel m = CostModel.defaults();
        assertThrows(IllegalArgumentException.class, () -> m.with("shm", "link", 10, Double.POSITIVE_INFINITY));
        assertThrows(IllegalArgumentException.class, () -> m.with("shm", "link", Double.NaN, 0.001));
        assertEquals(0.001, m.with("shm", "link", 10, 0.001).link("shm")[1], 0);
    }

    @Test
    void goodFilesStillLoad(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("tune.properties"), "shm.link.alpha_us=0\nshm.link.beta_us_per_byte="
                + "7.0E-4\n");
        assertEquals(0, CostModel.load(file).link("shm")[0], 0);
        assertEquals(7.0E-4, CostModel.load(file).link("shm")[1], 0);
    }

    /**
     * Measured choices ({@code jccl tune --choices}): AUTO takes the one of the nearest measured size, on that
     * transport and world size only, within a quarter of the smallest and four times the largest measured size, and
     * only an algorithm that can run there; rank 0's text carries them to every rank; a bad entry is refused.
     */
    @Test
    void measuredChoicesDecideWhereTheyWereMeasured() {
        io.jccl.OpType ar = io.jccl.OpType.ALL_REDUCE;
        CostModel plain = CostModel.defaults();
        AlgorithmSelector model = new AlgorithmSelector(plain, "tcp", 0, 4);
        // over TCP on 4 ranks the model picks halving-doubling for small allreduces (steps tie, fewer bytes)
        assertEquals(io.jccl.Algorithm.HALVING_DOUBLING, model.choose(ar, 1024));
        CostModel m = plain.withChoice("tcp", ar, 4, 4, io.jccl.Algorithm.TREE)
                .withChoice("tcp", ar, 4, 1024, io.jccl.Algorithm.TREE)
                .withChoice("tcp", ar, 4, 65536, io.jccl.Algorithm.TREE)
                .withChoice("tcp", ar, 4, 1 << 20, io.jccl.Algorithm.RING);
        assertEquals(io.jccl.Algorithm.TREE, m.choice("tcp", ar, 4, 1024));
        assertEquals(io.jccl.Algorithm.TREE, m.choice("tcp", ar, 4, 8192)); // 1 KiB and 64 KiB: the smaller on a tie
        assertEquals(io.jccl.Algorithm.RING, m.choice("tcp", ar, 4, 4 << 20));
        assertEquals(null, m.choice("tcp", ar, 4, (4 << 20) + 1)); // beyond: the model's
        assertEquals(null, m.choice("tcp", ar, 4, Long.MAX_VALUE));
        assertEquals(null, m.choice("tcp", ar, 8, 1024)); // another world size
        assertEquals(null, m.choice("shm", ar, 4, 1024)); // another transport
        assertEquals(null, m.choice("tcp", io.jccl.OpType.BROADCAST, 4, 1024)); // another operation
        AlgorithmSelector tuned = new AlgorithmSelector(CostModel.parse(m.toText()), "tcp", 0, 4);
        assertEquals(io.jccl.Algorithm.TREE, tuned.choose(ar, 1024));
        assertEquals(io.jccl.Algorithm.RING, tuned.choose(ar, 1 << 20));
        assertEquals(model.choose(ar, 64 << 20), tuned.choose(ar, 64 << 20));
        // a choice that cannot run here (no shared arena over TCP) leaves the model's
        CostModel arena = plain.withChoice("tcp", ar, 4, 1024, io.jccl.Algorithm.SHARED_MEMORY);
        assertEquals(io.jccl.Algorithm.HALVING_DOUBLING, new AlgorithmSelector(arena, "tcp", 0, 4).choose(ar, 1024));
        for (String bad : new String[] {"tcp.choice.ALL_REDUCE.4.1024=FASTEST", "tcp.choice.ALL_REDUCE.4.1024=AUTO",
                "tcp.choice.ALLREDUCE.4.1024=TREE", "tcp.choice.ALL_REDUCE.1.1024=TREE",
                "tcp.choice.ALL_REDUCE.4=TREE", "tcp.choice.ALL_REDUCE.4.1024.=TREE",
                "tcp.choice.ALL_REDUCE.04.1024=TREE", "TCP.choice.ALL_REDUCE.4.1024=TREE"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CostModel.parse(bad + "\n"),
                    bad);
            assertTrue(e.getMessage().contains("is not a measured choice"), e.getMessage());
        }
    }
}
