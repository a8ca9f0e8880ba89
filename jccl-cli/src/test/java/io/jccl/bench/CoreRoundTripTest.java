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
 * its barriers; nothing where it is off; its file gone once both ranks mapped it.
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
            CoreRoundTrip rtt = CoreRoundTrip.open(comm, true);
            return new double[] {rtt.measure(), rtt.measure()};
        });
        for (double ns : got.get(0)) {
            // threads of one JVM on two cores or more: a cache line's round trip, tens to hundreds of ns; on one core
            // a round trip costs scheduler slices, and the window's budget turns the measurement off
            if (Runtime.getRuntime().availableProcessors() >= 2) {
                assertTrue(ns > 1 && ns < 1e5, "rank 0: " + ns);
            } else {
                assertTrue(Double.isNaN(ns) || ns > 1 && ns < WINDOW_LIMIT_NS, "rank 0: " + ns);
            }
        }
        for (int r = 1; r < 3; r++) {
            assertTrue(Double.isNaN(got.get(r)[0]) && Double.isNaN(got.get(r)[1]), "rank " + r);
        }
        assertEquals(before, files(), "the pair's file is removed once both ranks mapped it");
    }

    private static final double WINDOW_LIMIT_NS = (double) CoreRoundTrip.WINDOW_BUDGET_NANOS / CoreRoundTrip.WINDOW;

    /** Two or more ranks that fit the cores, not on the bed: oversubscribed ranks would spin against each other. */
    @Test
    void onlyRanksThatFitTheCoresMeasureIt() {
        assertTrue(CoreRoundTrip.applies(false, 2, 2));
        assertTrue(CoreRoundTrip.applies(false, 4, 8));
        assertTrue(!CoreRoundTrip.applies(false, 3, 2));
        assertTrue(!CoreRoundTrip.applies(false, 1, 2));
        assertTrue(!CoreRoundTrip.applies(true, 2, 2));
    }

    @Test
    void offItMeasuresNothing() {
        List<Double> got = Jccl.runThreads(2, comm -> CoreRoundTrip.open(comm, false).measure());
        assertTrue(got.stream().allMatch(d -> Double.isNaN(d)), got.toString());
    }
}
