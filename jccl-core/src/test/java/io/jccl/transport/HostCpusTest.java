package io.jccl.transport;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class HostCpusTest {
    private static long[] cpus(int... ids) {
        long[] bits = new long[HostCpus.WORDS];
        for (int c : ids) {
            bits[c >> 6] |= 1L << (c & 63);
        }
        return bits;
    }

    @Test
    void shouldParseTheAffinityListOfProcStatus() {
        assertArrayEquals(new int[] {0, 1}, HostCpus.parseStatus(List.of("Name:\tjava", "Cpus_allowed:\t3",
                "Cpus_allowed_list:\t0-1")));
        assertArrayEquals(new int[] {0, 2, 3, 4, 70}, HostCpus.parseStatus(List.of("Cpus_allowed_list:\t0,2-4,70")));
        assertNull(HostCpus.parseStatus(List.of("Cpus_allowed_list:\tzero")));
        assertNull(HostCpus.parseStatus(List.of("Cpus_allowed_list:\t3-1")));
        assertNull(HostCpus.parseStatus(List.of("Name:\tjava")));
        assertArrayEquals(cpus(0, 2, 3, 4, 70), HostCpus.bitmap(new int[] {0, 2, 3, 4, 70}));
        assertArrayEquals(cpus(), HostCpus.bitmap(new int[] {0, 5000}), "beyond the bitmap: unknown");
        assertArrayEquals(cpus(), HostCpus.bitmap(null));
    }

    @Test
    void shouldReadThisProcessesAffinityOnLinux() {
        long[] mine = HostCpus.allowed();
        int n = 0;
        for (long w : mine) {
            n += Long.bitCount(w);
        }
        // the JVM's own count is the affinity's, or less under a cgroup quota
        assertTrue(n >= Runtime.getRuntime().availableProcessors(), "affinity of " + n + " CPUs");
    }

    /** The case that made bound ranks never spin: each JVM sees one processor, yet each has a core of its own. */
    @Test
    void shouldCountRanksBoundToCoresOfTheirOwnAsNotOversubscribed() {
        assertEquals(2, HostCpus.cores(new long[][] {cpus(0), cpus(1)}, new int[] {1, 1}, 1));
        assertEquals(200, WaitStrategy.spinsFor(2, HostCpus.cores(new long[][] {cpus(0), cpus(1)},
                new int[] {1, 1}, 1), 0));
    }

    @Test
    void shouldCountRanksBoundToOneCoreAsOversubscribed() {
        assertEquals(1, HostCpus.cores(new long[][] {cpus(0), cpus(0)}, new int[] {1, 1}, 2));
        assertEquals(0, WaitStrategy.spinsFor(2, 1, 0));
    }

    @Test
    void shouldCountUnboundRanksByTheirSharedCores() {
        long[] both = cpus(0, 1);
        assertEquals(2, HostCpus.cores(new long[][] {both, both, both, both}, new int[] {2, 2, 2, 2}, 2));
    }

    @Test
    void shouldHonourACgroupQuotaBelowTheAffinity() {
        int[] all = new int[64];
        for (int c = 0; c < 64; c++) {
            all[c] = c;
        }
        long[] wide = cpus(all);
        assertEquals(2, HostCpus.cores(new long[][] {wide, wide, wide, wide}, new int[] {2, 2, 2, 2}, 2));
    }

    @Test
    void shouldFallBackWhenAnAffinityIsUnknown() {
        assertEquals(3, HostCpus.cores(new long[][] {cpus(0), cpus()}, new int[] {1, 1}, 3));
    }
}
