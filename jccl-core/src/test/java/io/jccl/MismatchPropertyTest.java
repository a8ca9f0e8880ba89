package io.jccl;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One rank calls a different collective, or the same one with another count, dtype or root: whatever the pair,
 * every rank raises a mismatch (or is told of one) well before the 20 s deadline: at the call, or, for the root of
 * an eager shared-memory broadcast (which returns without waiting), at the barrier after it.
 */
class MismatchPropertyTest {

    /** Call number {@code kind} with {@code variant} arguments. */
    private static void call(Communicator c, int kind, int variant) {
        int p = c.size();
        int n = 2 + variant; // element block
        int root = variant % p;
        switch (kind) {
            case 0: c.allReduce(Tensor.of(new float[n]), ReduceOp.SUM); break;
            case 1: c.broadcast(Tensor.of(new float[n]), root); break;
            case 2: c.allGather(Tensor.of(new float[n]), Tensor.of(new float[n * p])); break;
            case 3: c.reduceScatter(Tensor.of(new float[n * p]), Tensor.of(new float[n]), ReduceOp.SUM); break;
            case 4: c.reduce(Tensor.of(new float[n]), root, ReduceOp.SUM); break;
            case 5: c.gather(Tensor.of(new float[n]), c.rank() == root ? Tensor.of(new float[n * p]) : null, root);
                break;
            case 6: c.scatter(c.rank() == root ? Tensor.of(new float[n * p]) : null, Tensor.of(new float[n]), root);
                break;
            case 7: c.allToAll(Tensor.of(new float[n * p]), Tensor.of(new float[n * p])); break;
            case 8: c.barrier(); break;
            default: c.allReduce(Tensor.of(new double[n]), ReduceOp.SUM); break;
        }
    }

    @Property(tries = 80)
    void everyRankFailsOnAnyDisagreement(@ForAll @IntRange(min = 2, max = 7) int world,
                                         @ForAll @IntRange(min = 0, max = 9) int kind,
                                         @ForAll @IntRange(min = 0, max = 9) int otherKind,
                                         @ForAll @IntRange(min = 0, max = 6) int deviant,
                                         @ForAll @IntRange(min = 1, max = 3) int otherVariant,
                                         @ForAll TransportKind transport) throws Exception {
        int odd = deviant % world;
        // same kind: the deviant's block is larger (and its root moves); the barrier has no arguments, so the
        // deviant calls allReduce instead
        int k2 = kind == otherKind && kind == 8 ? 0 : otherKind;
        int v2 = kind == k2 ? otherVariant : 0;
        List<RankHarness.Outcome<Object>> out = RankHarness.run(transport, world, Duration.ofSeconds(20), comm -> {
            if (comm.rank() == odd) {
                call(comm, k2, v2);
            } else {
                call(comm, kind, 0);
            }
            comm.barrier(); // the root of an eager shared-memory broadcast returns at once: its next call fails
            return null;
        });
        // every rank fails with the mismatch itself or with a peer's abort that names it; at least one rank (one
        // that saw the other's call) raises the CollectiveMismatchException (as RankHarness.assertEveryRankFails)
        int mismatches = 0;
        for (int r = 0; r < world; r++) {
            Throwable e = out.get(r).error;
            int rank = r;
            assertNotNull(e, () -> "rank " + rank + " returned normally; kinds " + kind + "/" + k2);
            if (e instanceof CollectiveMismatchException) {
                CollectiveMismatchException m = (CollectiveMismatchException) e;
                assertEquals(r, m.rank(), m.getMessage());
                assertNotEquals(r, m.peer(), m.getMessage());
                assertTrue(m.getMessage().contains("mismatch with rank " + m.peer() + " in " + m.field()),
                        m.getMessage());
                mismatches++;
            } else {
                PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, e,
                        () -> "rank " + rank + " failed otherwise than by the mismatch (kinds " + kind + "/" + k2
                                + "): " + e);
                assertTrue(a.reason().contains("mismatch"), a.getMessage());
            }
        }
        assertTrue(mismatches >= 1, () -> "no rank raised the CollectiveMismatchException (kinds " + kind + "/" + k2
                + "): " + out.stream().map(o -> String.valueOf(o.error)).toList());
    }
}
