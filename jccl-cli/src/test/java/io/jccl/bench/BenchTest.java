package io.jccl.bench;

import io.jccl.OpType;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The bench's arithmetic on rows: medians of runs, AUTO against the best row. */
class BenchTest {

    private static Bench.Row row(String algorithm, long bytes, double us, long wrong, double inPlace) {
        return new Bench.Row(OpType.ALL_GATHER, algorithm, bytes, bytes / 4, 2, us, wrong, us * 1e-6, inPlace);
    }

    /**
     * The check of #wrong sees a block in the wrong place and an output never written (NaN), which inputs of rank + 1
     * everywhere and outputs left from the call before did not: every block of a rank was the same, and the last
     * call's correct output stood in for one a call failed to write.
     */
    @Test
    void theCheckSeesABlockInTheWrongPlaceAndAnOutputNeverWritten() {
        List<long[]> counts = io.jccl.Jccl.runThreads(3, comm -> {
            int n = 3;
            int block = 4;
            int r = comm.rank();
            float[] gathered = new float[n * block];
            float[] exchanged = new float[n * block];
            float[] reduced = new float[n * block];
            for (int i = 0; i < n * block; i++) {
                gathered[i] = Bench.input(i / block, i % block);
                exchanged[i] = Bench.input(i / block, r * block + i % block);
                reduced[i] = 6 * (1 + i % 251); // the sum of (r + 1)(1 + i mod 251) over 3 ranks
            }
            long[] right = {Bench.check(comm, OpType.ALL_GATHER, null, gathered, block),
                Bench.check(comm, OpType.ALL_TO_ALL, null, exchanged, block),
                Bench.check(comm, OpType.ALL_REDUCE, reduced, null, block)};
            float[] swapped = gathered.clone(); // blocks 0 and 1 in each other's place
            System.arraycopy(gathered, block, swapped, 0, block);
            System.arraycopy(gathered, 0, swapped, block, block);
            float[] shifted = reduced.clone(); // the sum of one element off
            System.arraycopy(reduced, 1, shifted, 0, shifted.length - 1);
            float[] unwritten = exchanged.clone();
            java.util.Arrays.fill(unwritten, 2 * block, 3 * block, Float.NaN);
            long[] wrong = {Bench.check(comm, OpType.ALL_GATHER, null, swapped, block),
                Bench.check(comm, OpType.ALL_REDUCE, shifted, null, block),
                Bench.check(comm, OpType.ALL_TO_ALL, null, unwritten, block)};
            return new long[] {right[0], right[1], right[2], wrong[0], wrong[1], wrong[2]};
        });
        for (long[] c : counts) {
            assertArrayEquals(new long[] {0, 0, 0, 8, 11, 4}, c);
        }
    }

    /**
     * The cpu column: the harness's own work taken out, per call and per rank sharing the process, never negative;
     * NaN (shown "-") where no clock resolved the row; the median of --rounds over the runs that had one.
     */
    @Test
    void theCpuColumnShowsOnlyWhatAClockResolves() {
        assertTrue(Double.isNaN(Bench.cpuPerCall(Double.NaN, 0, 300, 1)));
        assertEquals(1e-3, Bench.cpuPerCall(400_000_000L, 200_000_000L, 100, 2), 1e-12); // (0.4 - 0.2) s / 100 / 2
        assertEquals(0, Bench.cpuPerCall(300_000_000L, 400_000_000L, 10, 1), 0); // never negative
        List<Bench.Row> combined = Bench.medianOfRuns(List.of(
                List.of(new Bench.Row(OpType.ALL_REDUCE, "RING", 4, 1, 2, 1.0, 0, Double.NaN, Double.NaN)),
                List.of(new Bench.Row(OpType.ALL_REDUCE, "RING", 4, 1, 2, 2.0, 0, 3e-6, Double.NaN)),
                List.of(new Bench.Row(OpType.ALL_REDUCE, "RING", 4, 1, 2, 3.0, 0, Double.NaN, Double.NaN))));
        assertEquals(3e-6, combined.get(0).cpuSecondsPerOp, 0); // the runs the clock resolved
    }

    @Test
    void runsShouldBeCombinedSizeBySizeAsTheMedianOfTheirMedians() {
        List<Bench.Row> combined = Bench.medianOfRuns(List.of(
                List.of(row("RING", 4, 3.0, 0, 9.0), row("RING", 1024, 10.0, 0, 1.0)),
                List.of(row("RING", 4, 1.0, 2, 7.0), row("RING", 1024, 30.0, 0, 3.0)),
                List.of(row("RING", 4, 2.0, 0, 8.0), row("RING", 1024, 20.0, 1, 2.0))));
        assertEquals(2, combined.size());
        assertEquals(2.0, combined.get(0).medianUs, 0);
        assertEquals(8.0, combined.get(0).inPlaceUs, 0);
        assertEquals(2, combined.get(0).wrong); // every run's wrong results count
        assertArrayEquals(new double[] {3.0, 1.0, 2.0}, combined.get(0).runsUs, 0); // in the order they ran
        assertEquals(20.0, combined.get(1).medianUs, 0);
        assertEquals(1, combined.get(1).wrong);
        assertArrayEquals(new double[] {2.0, 5.0}, Bench.medianOfRuns(new double[][] {{1, 5}, {2, 4}, {3, 9}}), 0);
    }

    @Test
    void autoAgainstTheBestRowShouldAlsoPriceItsChoicesOwnRow() {
        List<Bench.Row> auto = List.of(row("AUTO:RING", 4, 12.0, 0, Double.NaN), row("AUTO:TREE", 1024, 5.0, 0,
                Double.NaN));
        List<List<Bench.Row>> explicit = List.of(
                List.of(row("RING", 4, 15.0, 0, Double.NaN), row("RING", 1024, 4.0, 0, Double.NaN)),
                List.of(row("TREE", 4, 10.0, 0, Double.NaN), row("TREE", 1024, 6.0, 0, Double.NaN)));
        List<String> lines = Bench.autoAgainstBest(auto, explicit);
        // 4 B: AUTO chose RING, TREE was fastest; RING's own row is 1.5x it
        assertEquals("#            4  1.20  AUTO:RING, best TREE 10.00 us; RING's row 1.50", lines.get(0));
        // 1 KiB: AUTO chose TREE, RING fastest
        assertEquals("#         1024  1.25  AUTO:TREE, best RING 4.00 us; TREE's row 1.50", lines.get(1));
        List<String> same = Bench.autoAgainstBest(List.of(row("AUTO:TREE", 4, 11.0, 0, Double.NaN)),
                List.of(List.of(row("TREE", 4, 10.0, 0, Double.NaN))));
        assertTrue(same.get(0).endsWith("AUTO:TREE, best TREE 10.00 us"), same.get(0)); // nothing more to say
    }

    /** Rows whose cores' round trips lie more than 1.5x apart are marked; a side not measured marks nothing. */
    @Test
    void placementsDifferOnlyWhereBothRoundTripsWereMeasuredAndLieApart() {
        assertTrue(Bench.placementsDiffer(100, 430));
        assertTrue(Bench.placementsDiffer(430, 100));
        assertTrue(!Bench.placementsDiffer(100, 149));
        assertTrue(!Bench.placementsDiffer(100, Double.NaN));
        assertTrue(!Bench.placementsDiffer(Double.NaN, Double.NaN));
        assertEquals(200, Bench.medianOfMeasured(new double[] {Double.NaN, 100, 200, 300}), 0);
        assertTrue(Double.isNaN(Bench.medianOfMeasured(new double[] {Double.NaN})));
        // the median of runs keeps the median of the runs' round trips
        List<Bench.Row> rows = Bench.medianOfRuns(List.of(
                List.of(new Bench.Row(OpType.ALL_REDUCE, "RING", 4, 1, 2, 1.0, 0, Double.NaN, Double.NaN, null, 400)),
                List.of(new Bench.Row(OpType.ALL_REDUCE, "RING", 4, 1, 2, 2.0, 0, Double.NaN, Double.NaN, null,
                        Double.NaN)),
                List.of(new Bench.Row(OpType.ALL_REDUCE, "RING", 4, 1, 2, 3.0, 0, Double.NaN, Double.NaN, null, 100))));
        assertEquals(250, rows.get(0).coreRoundTripNs, 0);
    }
}
