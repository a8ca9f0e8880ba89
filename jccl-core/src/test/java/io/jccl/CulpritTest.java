package io.jccl;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A timeout names the rank at fault, not the neighbour: before raising, the ranks that time out ask every rank how
 * far it got. With the ring every survivor waits for its left neighbour, which for most of them is another waiting
 * rank; yet every survivor must name the one that never reached the call.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CulpritTest {
    private static final Duration TIMEOUT = Duration.ofMillis(1500);

    /** Each survivor's failure message; the stalled rank's body returns null. */
    private static List<RankHarness.Outcome<String>> run(TransportKind kind, Jccl.RankBody<String> body)
            throws Exception {
        return RankHarness.run(kind, 4, TIMEOUT, Algorithm.RING, body);
    }

    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void aRankBusyOutsideJcclIsNamedByEverySurvivor(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<String>> out = run(kind, c -> {
            float[] x = new float[1000];
            c.allReduce(x); // #0: every rank
            if (c.rank() == 1) {
                Thread.sleep(TIMEOUT.toMillis() * 3); // stalled outside jccl: it answers nobody
                return null;
            }
            JcclException e = org.junit.jupiter.api.Assertions.assertThrows(JcclException.class,
                    () -> c.allReduce(x)); // #1: rank 1 never comes
            return e.getMessage();
        });
        for (int r = 0; r < 4; r++) {
            if (r == 1) {
                continue;
            }
            String m = out.get(r).value;
            assertNotNull(m, kind + " rank " + r + ": " + out.get(r).error);
            assertTrue(m.contains("rank 1 never entered allReduce #1"), kind + " rank " + r + ": " + m);
        }
    }

    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void aRankWaitingElsewhereIsNamedWithTheCallItIsIn(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<String>> out = run(kind, c -> {
            float[] x = new float[1000];
            c.allReduce(x); // #0
            if (c.rank() == 2) { // waits in jccl, but for a message nobody sends: it answers, from call #0
                JcclException e = org.junit.jupiter.api.Assertions.assertThrows(JcclException.class,
                        () -> c.recv(Tensor.of(new float[1]), 0, 99, CollectiveOptions.DEFAULT.withTimeout(
                                TIMEOUT.multipliedBy(3))));
                return null;
            }
            JcclException e = org.junit.jupiter.api.Assertions.assertThrows(JcclException.class,
                    () -> c.allReduce(x)); // #1
            return e.getMessage();
        });
        for (int r = 0; r < 4; r++) {
            if (r == 2) {
                continue;
            }
            String m = out.get(r).value;
            assertNotNull(m, kind + " rank " + r + ": " + out.get(r).error);
            assertTrue(m.contains("rank 2 never entered allReduce #1 (its last call is #0)"),
                    kind + " rank " + r + ": " + m);
        }
    }
}
