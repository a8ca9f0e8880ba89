package io.jccl.bench;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The cpu column's clock resolves a call's microseconds, where the tick clock read 0 or 10 ms. */
class ProcessCpuTest {
    @Test
    void twoMillisecondsOfWorkReadAsAboutThatMuch() {
        ProcessCpu clock = new ProcessCpu();
        assertTrue(clock.schedstat() > 0, "Linux keeps every thread's CPU time in /proc/self/task/*/schedstat");
        StringBuilder seen = new StringBuilder();
        for (int trial = 0; trial < 5; trial++) { // other threads of this JVM (the JIT) may add some, now and then
            clock.start();
            long until = System.nanoTime() + 2_000_000L;
            long spins = 0;
            while (System.nanoTime() - until < 0) {
                spins++;
            }
            double d = clock.since();
            seen.append(d).append(" ns (").append(spins > 0 ? "spun" : "-").append("); ");
            if (d >= 500_000L && d < 9_000_000L) { // a tick clock reads 0 or 10 ms
                return;
            }
        }
        throw new AssertionError("2 ms of work read as " + seen);
    }
}
