package io.jccl.bench;

import io.jccl.Jccl;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The cores' round trip of the bench's rows: measured by ranks 0 and 1 alone (rank 0 reports it), the others only in
 * its barriers; nothing where it is off; its file gone after close.
 */
class CoreRoundTripTest {

    private static long files() throws Exception {
        Path shm = Path.of("/dev/shm");
        Path dir = Files.isDirectory(shm) && Files.isWritable(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith("jccl-bench-rtt-")).count();
        }
    }

    @Test
    void ranksZeroAndOneMeasureItAndRankZeroReportsIt() throws Exception {
        long before = files();
        List<double[]> got = Jccl.runThreads(3, comm -> {
            try (CoreRoundTrip rtt = CoreRoundTrip.open(comm, true)) {
                return new double[] {rtt.measure(), rtt.measure()};
            }
        });
        for (double ns : got.get(0)) {
            // threads of one JVM: a few cores, or one core shared (then a round trip costs scheduler slices)
            assertTrue(ns > 1 && ns < 1e7, "rank 0: " + ns);
        }
        for (int r = 1; r < 3; r++) {
            assertTrue(Double.isNaN(got.get(r)[0]) && Double.isNaN(got.get(r)[1]), "rank " + r);
        }
        assertEquals(before, files(), "the pair's file is removed on close");
    }

    @Test
    void offItMeasuresNothing() {
        List<Double> got = Jccl.runThreads(2, comm -> {
            try (CoreRoundTrip rtt = CoreRoundTrip.open(comm, false)) {
                return rtt.measure();
            }
        });
        assertTrue(got.stream().allMatch(d -> Double.isNaN(d)), got.toString());
    }
}
