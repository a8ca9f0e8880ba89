package io.jccl.step;

import io.jccl.diag.FlightRecorder;
import io.jccl.transport.Transport;
import io.jccl.transport.local.QueueMesh;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Who is stuck: an answer reaches the ask that waits for it, whichever thread of the asking rank reads it. */
class ProgressExchangeTest {
    /**
     * Rank 0 asks rank 1 while another thread of rank 0 answers questions all the time (as every wait of another
     * communicator does): that thread reads rank 1's answer off the stream before the ask looks, most times. The ask
     * must still get it, not report rank 1 as one that did not answer (which names a live rank as the one at fault).
     */
    @Test
    void anAnswerReadByAnotherThreadOfTheAskerReachesTheAsk() throws Exception {
        QueueMesh mesh = QueueMesh.create(2);
        Transport t0 = mesh.endpoint(0);
        Transport t1 = mesh.endpoint(1);
        FlightRecorder r0 = new FlightRecorder(0, 16);
        FlightRecorder r1 = new FlightRecorder(1, 16);
        AtomicBoolean stop = new AtomicBoolean();
        Thread answerer = new Thread(() -> {
            while (!stop.get()) {
                ProgressExchange.answer(t1, r1);
                Thread.onSpinWait();
            }
        });
        Thread otherWaitOfRank0 = new Thread(() -> {
            while (!stop.get()) {
                ProgressExchange.answer(t0, r0);
                Thread.onSpinWait();
            }
        });
        answerer.start();
        otherWaitOfRank0.start();
        try {
            for (int i = 0; i < 5; i++) {
                long before = System.nanoTime();
                // a 30 s window: an ask that got the answer returns long before it (a bound against waiting the
                // window out, not a speed)
                ProgressExchange.Report[] reports = ProgressExchange.ask(t0, r0, 77, new int[] {0, 1}, 3,
                        30_000_000_000L, () -> { });
                ProgressExchange.Report r = reports[1];
                assertTrue(r.answered, "ask " + i + ": rank 1 answered, but the ask did not get it: " + r.gone);
                assertEquals(-2, r.entered, "rank 1 has no communicator 77");
                long ms = (System.nanoTime() - before) / 1_000_000;
                assertTrue(ms < 15_000, "the ask took " + ms + " ms: it waited out (half) its 30 s window");
            }
        } finally {
            stop.set(true);
            answerer.join();
            otherWaitOfRank0.join();
            t0.close();
            t1.close();
        }
    }
}
