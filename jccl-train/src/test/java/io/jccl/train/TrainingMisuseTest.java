package io.jccl.train;

import io.jccl.CommunicatorConfig;
import io.jccl.Jccl;
import io.jccl.JcclException;
import io.jccl.PeerAbortedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Misuse of the training classes fails with a message naming the rank: in the constructors on every rank, after one
 * exchange of what each rank was given, and by aborting the communicator where peers may already wait in the
 * step's collectives.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TrainingMisuseTest {
    /**
     * A rank that calls finish() with a parameter not marked ready, after a bucket's allreduce has started, aborts
     * its communicator: its peer fails at once with PeerAbortedException naming the rank and the parameter instead of
     * waiting out the timeout (it did, while the failing rank kept its communicator open), and the step is reset.
     */
    @Test
    void shouldAbortWhenFinishFindsAParameterNotMarkedReady() {
        CountDownLatch peerDone = new CountDownLatch(1);
        AtomicReference<String> message = new AtomicReference<>();
        AtomicReference<Throwable> afterwards = new AtomicReference<>();
        JcclException e = assertThrows(JcclException.class, () -> Jccl.runThreads(2,
                CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(20)), comm -> {
                    float[] grads = new float[8];
                    // a 16-byte cap: one bucket per parameter, bucket 0 holds parameter 1 (reverse order)
                    DistributedDataParallel ddp = new DistributedDataParallel(comm, List.of(
                            new DistributedDataParallel.Parameter("w", grads, 0, 4),
                            new DistributedDataParallel.Parameter("b", grads, 4, 4)), 16, true);
                    if (comm.rank() == 1) {
                        ddp.markReady(1); // starts bucket 0's allreduce; parameter "w" is never marked
                        message.set(assertThrows(IllegalStateException.class, ddp::finish).getMessage());
                        try {
                            ddp.markReady(1); // a new step: not "marked ready twice"
                        } catch (Throwable t) {
                            afterwards.set(t);
                        }
                        // the rank goes on holding its communicator open, as a process that caught the error would
                        assertTrue(peerDone.await(60, TimeUnit.SECONDS), "the peer ended");
                        return null;
                    }
                    try {
                        ddp.markReady(1);
                        ddp.markReady(0);
                        ddp.finish();
                        return null;
                    } finally {
                        peerDone.countDown();
                    }
                }));
        assertEquals(0, e.rank());
        PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, e.getCause());
        assertEquals(1, a.originRank());
        assertTrue(a.reason().contains("rank 1") && a.reason().contains("[w]"), a.reason());
        assertTrue(message.get().contains("rank 1") && message.get().contains("[w]"), message.get());
        // the step was reset (the new step's markReady is no "marked ready twice"), and the aborted communicator
        // refuses the allreduce it starts
        io.jccl.CommunicatorAbortedException refused = assertInstanceOf(io.jccl.CommunicatorAbortedException.class,
                afterwards.get(), String.valueOf(afterwards.get()));
        assertTrue(refused.getMessage().contains("allReduce refused: the communicator failed earlier")
                && !refused.getMessage().contains("twice"), refused.getMessage());
    }

    /**
     * FSDP steps whose globalRows differ between the ranks, or whose rows do not add up to it: every rank fails the
     * same way naming the ranks (the gradients were silently wrong: each rank's part scaled by its own globalRows),
     * and the communicator stays usable.
     */
    @Test
    void shouldRefuseGlobalBatchesThatDisagreeOnEveryRank() throws Exception {
        Mlp model = new Mlp(2, 3, 1);
        List<String> differ = Jccl.runThreads(2, comm -> {
            FullyShardedDataParallel f = new FullyShardedDataParallel(comm, model, model.initParams(1),
                    () -> Optimizer.sgd(0.1f, 0f));
            String m = assertThrows(IllegalArgumentException.class, // each rank its own mean: P times too large
                    () -> f.step(new float[4], new float[2], 2, 2)).getMessage();
            String sum = assertThrows(IllegalArgumentException.class,
                    () -> f.step(new float[4], new float[2], 2, 5)).getMessage();
            String sizes = comm.rank() == 0 ? "" : assertThrows(IllegalArgumentException.class,
                    () -> f.step(new float[4], new float[2], 2, 3)).getMessage();
            if (comm.rank() == 0) {
                assertThrows(IllegalArgumentException.class, () -> f.step(new float[4], new float[2], 2, 4));
            }
            f.step(new float[4], new float[2], 2, 4); // usable afterwards
            return m + " | " + sum + " | " + sizes;
        });
        for (int r = 0; r < 2; r++) {
            String m = differ.get(r);
            assertTrue(m.startsWith("rank " + r + ": FullyShardedDataParallel.step: the ranks' rows add up to 4 "
                    + "(rank 0: 2, rank 1: 2), not to the globalRows every rank gave, 2"), m);
            assertTrue(m.contains("the ranks' rows add up to 4 (rank 0: 2, rank 1: 2), not to the globalRows every "
                    + "rank gave, 5"), m);
        }
        assertTrue(differ.get(1).contains("rank 1 gave globalRows=3, rank 0 gave 4"), differ.get(1));
    }

    /** ZeRO and DDP refuse bad input by aborting the communicator: the peer, already in the step's collectives,
     * fails at once naming the rank (it waited out its deadline). */
    @Test
    void shouldAbortAZeroStepOfTheWrongLengthAndADoubleMarkReady() {
        for (int trial = 0; trial < 2; trial++) {
            boolean zero = trial == 0;
            JcclException e = assertThrows(JcclException.class, () -> Jccl.runThreads(2,
                    CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(60)), comm -> {
                        long before = System.nanoTime();
                        if (zero) {
                            ZeroRedundancyOptimizer z = new ZeroRedundancyOptimizer(comm, 8,
                                    () -> Optimizer.sgd(0.1f, 0f));
                            if (comm.rank() == 1) {
                                assertThrows(IllegalArgumentException.class, () -> z.step(new float[8], new float[7]));
                                return null;
                            }
                            try {
                                z.step(new float[8], new float[8]);
                            } finally {
                                assertTrue(System.nanoTime() - before < 30_000_000_000L, "waited out the deadline");
                            }
                            return null;
                        }
                        float[] grads = new float[8];
                        DistributedDataParallel ddp = new DistributedDataParallel(comm, List.of(
                                new DistributedDataParallel.Parameter("w", grads, 0, 4),
                                new DistributedDataParallel.Parameter("b", grads, 4, 4)), 16, true);
                        if (comm.rank() == 1) {
                            ddp.markReady(1);
                            assertThrows(IllegalStateException.class, () -> ddp.markReady(1));
                            return null;
                        }
                        try {
                            ddp.markReady(1);
                            ddp.markReady(0);
                            ddp.finish();
                        } finally {
                            assertTrue(System.nanoTime() - before < 30_000_000_000L, "waited out the deadline");
                        }
                        return null;
                    }));
            assertEquals(0, e.rank());
            PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, e.getCause());
            assertEquals(1, a.originRank());
            assertTrue(a.reason().contains(zero ? "rank 1: ZeroRedundancyOptimizer.step of 8 parameters and 7 "
                    + "gradients" : "rank 1: parameter b marked ready twice"), a.reason());
        }
    }

    @Test
    void shouldRefuseAParameterOutsideItsArray() {
        float[] grads = new float[8];
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new DistributedDataParallel.Parameter("layer0.bias", grads, 6, 4));
        assertTrue(e.getMessage().contains("layer0.bias") && e.getMessage().contains("8 floats"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new DistributedDataParallel.Parameter("x", grads, -1, 2));
        assertThrows(IllegalArgumentException.class, () -> new DistributedDataParallel.Parameter("x", grads, 0, -1));
    }

    /**
     * An FSDP step of no rows on one rank (averaged, its mean over no rows is NaN, which the average took into every
     * rank's gradients and parameters) fails that rank and aborts the communicator, so that its peer, already in the
     * step's collectives, fails at once naming it.
     */
    @Test
    void shouldAbortAnAveragedStepOfNoRows() {
        Mlp model = new Mlp(2, 3, 1);
        AtomicReference<String> refused = new AtomicReference<>();
        JcclException e = assertThrows(JcclException.class, () -> Jccl.runThreads(2,
                CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(60)), comm -> {
                    FullyShardedDataParallel f = new FullyShardedDataParallel(comm, model, model.initParams(1),
                            () -> Optimizer.sgd(0.1f, 0f));
                    if (comm.rank() == 1) {
                        refused.set(assertThrows(IllegalArgumentException.class,
                                () -> f.step(new float[0], new float[0], 0)).getMessage());
                        return null;
                    }
                    long before = System.nanoTime();
                    try {
                        return f.step(new float[4], new float[2], 2);
                    } finally {
                        assertTrue(System.nanoTime() - before < 30_000_000_000L, "the peer waited out its deadline");
                    }
                }));
        assertEquals(0, e.rank());
        PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, e.getCause());
        assertEquals(1, a.originRank());
        assertTrue(a.reason().contains("0 rows"), a.reason());
        assertTrue(refused.get().startsWith("rank 1:") && refused.get().contains("globalRows"), refused.get());
    }

    /**
     * A pipeline step whose first stage's leader has too few inputs fails that rank and aborts the communicator: the
     * last stage, already waiting for the activations, fails at once naming it (it waited out its deadline).
     */
    @Test
    void shouldAbortAPipelineStepWithTooFewInputs() {
        Mlp model = new Mlp(2, 3, 1);
        AtomicReference<String> refused = new AtomicReference<>();
        JcclException e = assertThrows(JcclException.class, () -> Jccl.runThreads(2,
                CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(60)), comm -> {
                    PipelineParallel p = new PipelineParallel(comm, model, model.initParams(1), 2,
                            Optimizer.sgd(0.1f, 0f));
                    if (comm.rank() == 0) { // the first stage's leader: 2 rows need 4 inputs
                        refused.set(assertThrows(IllegalArgumentException.class,
                                () -> p.step(new float[3], null, 2)).getMessage());
                        return null;
                    }
                    long before = System.nanoTime();
                    try {
                        return p.step(null, new float[2], 2);
                    } finally {
                        assertTrue(System.nanoTime() - before < 30_000_000_000L, "the peer waited out its deadline");
                    }
                }));
        assertEquals(1, e.rank());
        PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, e.getCause());
        assertEquals(0, a.originRank());
        assertTrue(a.reason().contains("4 inputs"), a.reason());
        assertTrue(refused.get().startsWith("rank 0:"), refused.get());
    }

    /** Arrays of the wrong length fail on every rank before the first collective, naming the rank. */
    @Test
    void shouldRefuseArraysOfTheWrongLengthBeforeAnyCollective() {
        Mlp model = new Mlp(2, 3, 1);
        List<String> messages = Jccl.runThreads(2, comm -> {
            StringBuilder all = new StringBuilder();
            ZeroRedundancyOptimizer z = new ZeroRedundancyOptimizer(comm, 5, () -> Optimizer.sgd(0.1f, 0f));
            all.append(assertThrows(IllegalArgumentException.class,
                    () -> new FullyShardedDataParallel(comm, model, new float[model.totalParams() - 1],
                            () -> Optimizer.sgd(0.1f, 0f))).getMessage()).append('\n');
            FullyShardedDataParallel f = new FullyShardedDataParallel(comm, model, model.initParams(1),
                    () -> Optimizer.sgd(0.1f, 0f));
            all.append(assertThrows(IllegalArgumentException.class,
                    () -> new DistributedDataParallel(comm, List.of(), 0, true)).getMessage()).append('\n');
            all.append(assertThrows(IllegalArgumentException.class,
                    () -> new PipelineParallel(comm, model, new float[model.totalParams() + 1], 2,
                            Optimizer.sgd(0.1f, 0f))).getMessage()).append('\n');
            // the communicator still works: nothing was left half done
            z.step(new float[5], new float[5]);
            f.step(new float[4], new float[2], 2);
            // a step's own arguments abort the communicator (the tests above): last
            all.append(assertThrows(IllegalArgumentException.class,
                    () -> f.step(new float[3], new float[2], 2)).getMessage()).append('\n');
            all.append(assertThrows(IllegalArgumentException.class,
                    () -> z.step(new float[5], new float[4])).getMessage()).append('\n');
            return all.toString();
        });
        for (int r = 0; r < 2; r++) {
            for (String m : messages.get(r).split("\n")) {
                assertTrue(m.startsWith("rank " + r + ":"), m);
            }
        }
    }

    /**
     * Arguments that one rank refuses, or that differ across ranks, fail every rank's constructor alike, naming the
     * rank at fault and what differed, and leave the communicator usable. A bad argument failed its own rank's
     * constructor alone (the peers then waited in the first step to their deadline), and two models of the same
     * size but another shape summed one parameter's gradient into another's without an error.
     */
    @Test
    void shouldRefuseConstructionsThatDifferAcrossRanksOnEveryRank() {
        Mlp model = new Mlp(2, 3, 1);
        List<String> messages = Jccl.runThreads(2, comm -> {
            int r = comm.rank();
            StringBuilder all = new StringBuilder();
            float[] grads = new float[8];
            all.append(assertThrows(IllegalArgumentException.class, () -> new DistributedDataParallel(comm, List.of(
                    new DistributedDataParallel.Parameter("w", grads, 0, r == 0 ? 3 : 5),
                    new DistributedDataParallel.Parameter("b", grads, r == 0 ? 3 : 5, r == 0 ? 5 : 3)), 1 << 20,
                    true)).getMessage()).append('\n');
            all.append(assertThrows(IllegalArgumentException.class, () -> new DistributedDataParallel(comm,
                    List.of(new DistributedDataParallel.Parameter("w", grads, 0, 8)), r == 1 ? 0 : 1 << 20,
                    false)).getMessage()).append('\n');
            all.append(assertThrows(IllegalArgumentException.class, () -> new ZeroRedundancyOptimizer(comm,
                    r == 1 ? -1 : 8, () -> Optimizer.sgd(0.1f, 0f))).getMessage()).append('\n');
            float[] init = model.initParams(1);
            if (r == 1) {
                init[0] += 1e-3f;
            }
            all.append(assertThrows(IllegalArgumentException.class, () -> new FullyShardedDataParallel(comm, model,
                    init, () -> Optimizer.sgd(0.1f, 0f))).getMessage()).append('\n');
            all.append(assertThrows(IllegalArgumentException.class, () -> new PipelineParallel(comm, model,
                    model.initParams(1), r == 1 ? 3 : 2, Optimizer.sgd(0.1f, 0f))).getMessage()).append('\n');
            float[] other = model.initParams(1);
            if (r == 1) {
                other[0] += 1e-3f;
            }
            all.append(assertThrows(IllegalArgumentException.class, () -> new PipelineParallel(comm, model,
                    other, 1, Optimizer.sgd(0.1f, 0f))).getMessage()).append('\n'); // one stage: replicas
            // what may differ: names, a bucket size giving the same buckets, another stage's layers
            new DistributedDataParallel(comm, List.of(new DistributedDataParallel.Parameter(r == 0 ? "w" : "weight",
                    grads, 0, 8)), r == 0 ? 1 << 20 : 1 << 10, r == 0);
            float[] mine = model.initParams(1);
            mine[r == 0 ? mine.length - 1 : 0] = 42f; // the layer of the other rank's stage
            new PipelineParallel(comm, model, mine, 2, Optimizer.sgd(0.1f, 0f));
            float[] sum = {1f};
            comm.allReduce(sum); // the communicator still works
            all.append(sum[0]);
            return all.toString();
        });
        for (int r = 0; r < 2; r++) {
            String[] m = messages.get(r).split("\n");
            assertTrue(m[0].startsWith("rank " + r + ": DistributedDataParallel differs across ranks")
                    && m[0].contains("rank 1 has parameter 0 of 5 elements where rank 0 has parameter 0 of 3 "
                    + "elements"), m[0]);
            assertTrue(m[1].startsWith("rank " + r + ": DistributedDataParallel refused by a rank")
                    && m[1].contains("rank 1: bucketBytes must be positive: bucketBytes=0"), m[1]);
            assertTrue(m[2].contains("rank 1: -1 parameters"), m[2]);
            assertTrue(m[3].startsWith("rank " + r + ": FullyShardedDataParallel differs across ranks")
                    && m[3].contains("rank 1 has initial parameters: " + model.totalParams() + " values of hash"), m[3]);
            assertTrue(m[4].startsWith("rank " + r + ": PipelineParallel refused by a rank")
                    && m[4].contains("rank 1: need a stage count"), m[4]);
            assertTrue(m[5].startsWith("rank " + r + ": PipelineParallel (stage 0) differs across ranks")
                    && m[5].contains("rank 1 has initial parameters of layers 0-1"), m[5]);
            assertEquals("2.0", m[6]);
        }
    }
}
