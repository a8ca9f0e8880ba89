package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.step.CollectiveCall;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The registry and the public {@link Algorithm#available} / {@link Algorithm#resolve} (which sit below it and cannot
 * consult it) say the same thing, and every registered algorithm answers the questions the pipeline asks.
 */
class AlgorithmRegistryTest {
    private static final AlgorithmRegistry REGISTRY = AlgorithmRegistry.standard();
    /** Point-to-point: {@link Algorithm#DIRECT} in the API, no algorithm object. */
    private static final Set<OpType> POINT_TO_POINT = EnumSet.of(OpType.SEND, OpType.RECV);

    @Test
    void shouldRegisterExactlyWhatAlgorithmAvailableLists() {
        for (CollectiveAlgorithm a : REGISTRY.all()) {
            assertTrue(Algorithm.available(a.operation()).contains(a.algorithm()), () -> a.getClass().getSimpleName()
                    + " implements " + a.operation().label() + " " + a.algorithm()
                    + ", which Algorithm.available does not list: add it there");
            assertSame(a, REGISTRY.get(a.operation(), a.algorithm()));
        }
        for (OpType op : OpType.values()) {
            List<Algorithm> registered = new ArrayList<>();
            REGISTRY.forOperation(op).forEach(a -> registered.add(a.algorithm()));
            if (POINT_TO_POINT.contains(op)) {
                assertEquals(List.of(), registered, op.label());
                continue;
            }
            // the same algorithms, in the same (declaration) order, so AUTO breaks ties as before
            assertEquals(new ArrayList<>(Algorithm.available(op)), registered, op.label()
                    + ": Algorithm.available and the registry differ");
            assertEquals(Algorithm.resolve(op, Algorithm.AUTO), registered.get(0), op.label());
            for (CollectiveAlgorithm a : REGISTRY.forOperation(op)) {
                assertEquals(op, a.operation());
            }
        }
    }

    @Test
    void shouldRefuseTwoAlgorithmsForOnePair() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new AlgorithmRegistry(List.of(new RingAllReduce(), new RingAllReduce())));
        assertTrue(e.getMessage().contains("allReduce RING is registered twice"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> REGISTRY.get(OpType.BROADCAST, Algorithm.RING));
        assertNull(REGISTRY.find(OpType.SEND, Algorithm.DIRECT));
    }

    @Test
    void shouldRefuseAnAlgorithmThatClaimsAuto() {
        CollectiveAlgorithm auto = new CollectiveAlgorithm() {
            @Override
            public OpType operation() {
                return OpType.BARRIER;
            }

            @Override
            public Algorithm algorithm() {
                return Algorithm.AUTO;
            }

            @Override
            public void run(CollectiveCall call, Operands operands) {
            }

            @Override
            public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
                return 0;
            }
        };
        assertThrows(IllegalArgumentException.class, () -> new AlgorithmRegistry(List.of(auto)));
    }

    @Test
    void shouldNeedAnArenaOnlyForSharedMemory() {
        Topology tcp = new Topology(4, "tcp", false, false, 0);
        Topology group = new Topology(2, "local", true, false, 0);
        Topology threads = new Topology(4, "local", false, true, 4 << 20);
        Topology twoHosts = new Topology(4, "shm+tcp", false, false, 0, new int[] {0, 0, 1, 1}, null);
        for (CollectiveAlgorithm a : REGISTRY.all()) {
            if (a.algorithm() == Algorithm.HIERARCHICAL) { // the other requirement: a layout of several hosts
                assertNull(a.unsupported(twoHosts));
                assertTrue(a.unsupported(threads).contains("needs ranks on several hosts"), a.unsupported(threads));
                assertTrue(a.unsupported(tcp).contains("on unknown hosts"), a.unsupported(tcp));
                continue;
            }
            assertNull(a.unsupported(threads), a.getClass().getSimpleName());
            if (a.algorithm() == Algorithm.SHARED_MEMORY) {
                assertEquals("algorithm SHARED_MEMORY needs ranks that share memory (threads, or the shm transport) "
                        + "and the world communicator; this one runs over tcp", a.unsupported(tcp));
                assertTrue(a.unsupported(group).endsWith("runs over local as a sub-group"), a.unsupported(group));
            } else {
                assertNull(a.unsupported(tcp), a.getClass().getSimpleName());
            }
        }
    }

    @Test
    void shouldPredictAFiniteNonNegativeTime() {
        LinkCost messages = new LinkCost(50, 0.0009);
        LinkCost arena = new LinkCost(4, 0.00023);
        for (int world : new int[] {1, 2, 3, 8, 13}) {
            Topology t = new Topology(world, "shm", false, true, 4 << 20);
            for (CollectiveAlgorithm a : REGISTRY.all()) {
                for (long bytes : new long[] {0, 4, 16384, 16388, 64L << 20}) {
                    double us = a.predictMicros(bytes, t, messages, arena);
                    assertTrue(us >= 0 && Double.isFinite(us), a.getClass().getSimpleName() + " on " + world
                            + " ranks, " + bytes + " bytes: " + us);
                }
            }
        }
        // one rank: nothing to do; the message algorithms are preferred over the arena's
        Topology one = new Topology(1, "local", false, true, 4 << 20);
        assertEquals(0, REGISTRY.get(OpType.ALL_REDUCE, Algorithm.RING).predictMicros(1 << 20, one, messages, arena));
        assertEquals(1, REGISTRY.get(OpType.ALL_REDUCE, Algorithm.SHARED_MEMORY).predictMicros(1 << 20, one, messages,
                arena));
        assertNotNull(REGISTRY.get(OpType.BARRIER, Algorithm.DISSEMINATION));
    }

    @Test
    void shouldCountTheSignatureChecksSteps() {
        // one ring step, then the dissemination rounds at distances 1, 2, 4, ... below P
        int[] expected = {0, 0, 2, 3, 3, 4, 4, 4, 4, 5};
        for (int p = 1; p < expected.length; p++) {
            assertEquals(expected[p], SignatureCheck.steps(p), "P=" + p);
        }
    }
}
