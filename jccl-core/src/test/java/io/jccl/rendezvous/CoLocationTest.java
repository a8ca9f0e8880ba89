package io.jccl.rendezvous;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/** Who shares memory with whom, from the ranks' views of each other's co-location probes. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CoLocationTest {

    /**
     * A rank that could not write its own probe (its shared-memory directory full, read-only or missing) saw itself
     * as '0': its group was empty, and the rendezvous failed with an ArrayIndexOutOfBoundsException instead of
     * connecting it over TCP. It is now alone, as the layout has it.
     */
    @Test
    void aRankWhoseOwnProbeFailedIsAlone() {
        String[] seen = {"101", "000", "101"};
        assertArrayEquals(new int[] {1}, Rendezvous.localGroup(1, seen));
        assertArrayEquals(new int[] {0, 2}, Rendezvous.localGroup(0, seen));
        assertArrayEquals(new int[] {0, 1, 0}, Rendezvous.hostsOf(3, seen));
    }
}
