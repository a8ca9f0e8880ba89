package io.jccl;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An interrupt of a thread waiting in a call ends its wait at once, with an error that says so, its interrupt status
 * kept. The shared-memory receive and ring, and the arenas of threads and of processes, waited on (a park returns at
 * once while the status is set: a core at 100%) until the call's deadline.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class InterruptTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    private interface Call {
        void run(Communicator comm) throws Exception;
    }

    /**
     * Rank 0 runs {@code call}, which waits for rank 1, which never calls; its thread is interrupted after 200 ms.
     * Returns rank 0's error, after checking that it came well before the timeout and that the status stayed set.
     */
    private static Throwable interruptedDuring(TransportKind kind, Algorithm algorithm,
                                               Call call) throws Exception {
        AtomicReference<Thread> waiter = new AtomicReference<>();
        AtomicBoolean stillInterrupted = new AtomicBoolean();
        long[] took = new long[1];
        Thread interrupter = new Thread(() -> {
            try {
                while (waiter.get() == null) {
                    Thread.sleep(5);
                }
                Thread.sleep(200);
                waiter.get().interrupt();
            } catch (InterruptedException e) {
                // the test is over
            }
        }, "interrupter");
        interrupter.setDaemon(true);
        interrupter.start();
        List<RankHarness.Outcome<Object>> out = RankHarness.run(kind, 2, TIMEOUT, algorithm, comm -> {
            if (comm.rank() == 1) {
                return null; // never calls
            }
            long start = System.nanoTime();
            waiter.set(Thread.currentThread());
            try {
                call.run(comm);
                return null;
            } finally {
                took[0] = System.nanoTime() - start;
                stillInterrupted.set(Thread.interrupted());
            }
        });
        interrupter.join(5_000);
        assertNull(out.get(1).error);
        Throwable e = out.get(0).error;
        JcclException j = assertInstanceOf(JcclException.class, e, () -> "rank 0: " + e);
        assertTrue(j.getMessage().contains("interrupted"), j.getMessage());
        assertTrue(took[0] < TIMEOUT.toNanos() / 2, "ended " + took[0] / 1_000_000 + " ms after it began");
        assertTrue(stillInterrupted.get(), "the interrupt status was not kept");
        return e;
    }

    @ParameterizedTest
    @MethodSource("io.jccl.RankHarness#kindsAndAlgorithms")
    void anInterruptedBarrierShouldEndAtOnceSayingSo(TransportKind kind, Algorithm algorithm) throws Exception {
        Throwable e = interruptedDuring(kind, algorithm, Communicator::barrier);
        assertTrue(e.getMessage().contains("rank 0: barrier #0 interrupted while waiting for rank 1"),
                e.getMessage());
    }
}
