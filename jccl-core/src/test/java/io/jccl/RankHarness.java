package io.jccl;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs one body per rank on threads and reports each rank's result or exception, without propagating. */
final class RankHarness {
    private RankHarness() {
    }

    static final class Outcome<T> {
        final T value;
        final Throwable error;

        Outcome(T value, Throwable error) {
            this.value = value;
            this.error = error;
        }
    }

    /**
     * Every rank failed: with a mismatch in {@code field} that it found itself (naming itself and the peer that
     * differs), or told of one by a peer; at least one rank found it itself.
     */
    static <T> void assertEveryRankFails(List<Outcome<T>> out, String field) {
        int mismatches = 0;
        for (int r = 0; r < out.size(); r++) {
            Throwable e = out.get(r).error;
            int rank = r;
            assertNotNull(e, () -> "rank " + rank + " returned normally");
            if (e instanceof CollectiveMismatchException) {
                CollectiveMismatchException m = (CollectiveMismatchException) e;
                assertEquals(field, m.field(), m.getMessage());
                assertEquals(r, m.rank());
                assertTrue(m.getMessage().contains("rank " + m.peer() + " has " + field + "="), m.getMessage());
                mismatches++;
            } else {
                PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, e,
                        () -> "rank " + rank + ": " + e);
                assertTrue(a.reason().contains("mismatch") && a.reason().contains(field), a.getMessage());
            }
        }
        assertTrue(mismatches >= 1, "nobody detected the mismatch");
    }

    static <T> List<Outcome<T>> run(int world, Duration timeout, Jccl.RankBody<T> body) throws Exception {
        return run(TransportKind.LOCAL, world, timeout, body);
    }

    /**
     * Every transport with the message algorithms (RING, and the tree broadcast and dissemination barrier), and
     * the transports with a shared arena also with SHARED_MEMORY.
     */
    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> kindsAndAlgorithms() {
        java.util.stream.Stream.Builder<org.junit.jupiter.params.provider.Arguments> b = java.util.stream.Stream.builder();
        for (TransportKind k : TransportKind.values()) {
            b.add(org.junit.jupiter.params.provider.Arguments.of(k, Algorithm.RING));
            if (k != TransportKind.TCP) {
                b.add(org.junit.jupiter.params.provider.Arguments.of(k, Algorithm.SHARED_MEMORY));
            }
        }
        return b.build();
    }

    static <T> List<Outcome<T>> run(TransportKind kind, int world, Duration timeout, Jccl.RankBody<T> body)
            throws Exception {
        return run(kind, world, timeout, Algorithm.AUTO, body);
    }

    /** As {@link #run(TransportKind, int, Duration, Jccl.RankBody)}, every operation that has it using {@code algorithm}. */
    static <T> List<Outcome<T>> run(TransportKind kind, int world, Duration timeout, Algorithm algorithm,
                                    Jccl.RankBody<T> body) throws Exception {
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(timeout);
        if (algorithm == Algorithm.RING) { // the message algorithms throughout
            config = config.withAlgorithm(algorithm).withAlgorithm(OpType.BROADCAST, Algorithm.TREE)
                    .withAlgorithm(OpType.BARRIER, Algorithm.DISSEMINATION);
        } else if (algorithm != Algorithm.AUTO) {
            config = config.withAlgorithm(algorithm);
        }
        List<Communicator> comms = kind.create(world, config);
        ExecutorService pool = Executors.newFixedThreadPool(world);
        try {
            List<Future<T>> futures = new ArrayList<>();
            for (Communicator c : comms) {
                futures.add(pool.submit(() -> body.run(c)));
            }
            List<Outcome<T>> out = new ArrayList<>();
            for (Future<T> f : futures) {
                try {
                    out.add(new Outcome<>(f.get(timeout.toMillis() * 4 + 10_000, TimeUnit.MILLISECONDS), null));
                } catch (java.util.concurrent.ExecutionException e) {
                    out.add(new Outcome<>(null, e.getCause()));
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
            TransportKind.closeAll(comms);
        }
    }
}
