package io.jccl.instrument;

import io.jccl.OpType;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The two kinds of adds (atomic, and the turn's without an atomic instruction) and reset over both. */
class TrafficCountersTest {
    @Test
    void readsSumBothKindsOfAddsAndResetZeroesBoth() {
        TrafficCounters c = new TrafficCounters();
        c.add(OpType.ALL_REDUCE, Counter.BYTES_SENT, 100);
        c.addInTurn(OpType.ALL_REDUCE, Counter.BYTES_SENT, 20);
        c.addInTurn(OpType.ALL_REDUCE, Counter.CALLS, 1);
        assertEquals(120, c.bytesSent(OpType.ALL_REDUCE));
        assertEquals(1, c.get(OpType.ALL_REDUCE, Counter.CALLS));
        assertEquals(0, c.get(OpType.BROADCAST, Counter.CALLS));
        assertEquals(1, c.total(Counter.CALLS));
        c.reset();
        assertEquals(0, c.bytesSent(OpType.ALL_REDUCE));
        assertEquals(0, c.total(Counter.CALLS));
        assertEquals("TrafficCounters[]", c.toString());
        c.addInTurn(OpType.ALL_REDUCE, Counter.BYTES_SENT, 7);
        c.add(OpType.ALL_REDUCE, Counter.BYTES_SENT, 1);
        assertEquals(8, c.bytesSent(OpType.ALL_REDUCE));
        c.reset();
        c.reset();
        assertEquals(0, c.bytesSent(OpType.ALL_REDUCE));
    }

    /**
     * Turns handed from thread to thread (each turn's end happens-before the next's start, as the pipeline's volatile
     * turn counter makes it) lose no add, while another thread reads and resets nothing; a reader sees whole values
     * that never go down.
     */
    @Test
    void turnsOnManyThreadsLoseNoAddAndReadersSeeNoTornOrFallingValue() throws Exception {
        TrafficCounters c = new TrafficCounters();
        java.util.concurrent.atomic.AtomicInteger turn = new java.util.concurrent.atomic.AtomicInteger();
        int threads = 3;
        int perThread = 2_000;
        Thread[] writers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            int me = t;
            writers[t] = new Thread(() -> {
                for (int i = 0; i < perThread; i++) {
                    while (turn.get() % threads != me) {
                        Thread.yield(); // three writers and a reader on as few as two cores: spinning took minutes
                    }
                    c.addInTurn(OpType.ALL_GATHER, Counter.BYTES_RECEIVED, 1L << 33); // beyond 32 bits: no tearing
                    turn.incrementAndGet();
                }
            });
        }
        for (Thread w : writers) {
            w.start();
        }
        long last = 0;
        boolean running = true;
        while (running) {
            running = false;
            for (Thread w : writers) {
                running |= w.isAlive();
            }
            long now = c.bytesReceived(OpType.ALL_GATHER);
            assertTrue(now >= last && now % (1L << 33) == 0, "read " + now + " after " + last);
            last = now;
            Thread.yield();
        }
        for (Thread w : writers) {
            w.join();
        }
        assertEquals((long) threads * perThread << 33, c.bytesReceived(OpType.ALL_GATHER));
    }
}
