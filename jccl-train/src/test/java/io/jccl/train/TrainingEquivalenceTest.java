package io.jccl.train;

import io.jccl.CommunicatorConfig;
import io.jccl.Jccl;
import io.jccl.JcclException;
import io.jccl.PeerAbortedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * DDP, ZeRO, FSDP and pipeline training on 2, 3 and 4 ranks follow single-process training on the same global
 * batch: every step's loss within 1e-4 relative (float sums in another order), and the loss must fall.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TrainingEquivalenceTest {
    static final double TOLERANCE = 1e-4;

    static TrainConfig config(String optimizer) {
        TrainConfig c = new TrainConfig();
        c.steps = 25;
        c.optimizer = optimizer;
        if (optimizer.equals("adam")) {
            c.lr = 0.01f;
        }
        return c;
    }

    static void assertFollows(Trainer.Result single, Trainer.Result r) {
        for (int t = 0; t < single.losses.length; t++) {
            double a = single.losses[t];
            double b = r.losses[t];
            assertTrue(Math.abs(a - b) <= TOLERANCE * Math.max(1, Math.abs(a)),
                    r.mode + " on " + r.world + " ranks, step " + t + ": loss " + b + " vs single " + a);
        }
        assertTrue(single.losses[single.losses.length - 1] < 0.7 * single.losses[0], "the model must learn");
    }

    @ParameterizedTest(name = "{0} on {1} ranks, {2}")
    @CsvSource({"DDP,2,sgd", "DDP,3,sgd", "DDP,4,sgd", "DDP,4,adam",
        "ZERO,2,sgd", "ZERO,3,adam", "ZERO,4,sgd", "ZERO,4,adam",
        "FSDP,2,sgd", "FSDP,3,sgd", "FSDP,4,adam",
        "PIPELINE,2,sgd", "PIPELINE,3,sgd", "PIPELINE,4,sgd", "PIPELINE,4,adam"})
    void shouldMatchSingleProcessTraining(TrainConfig.Mode mode, int world, String optimizer) {
        TrainConfig cfg = config(optimizer);
        cfg.stages = world % 2 == 0 ? 2 : 3; // the pipeline: 3 ranks make 3 stages of one layer each
        Trainer.Result single = Trainer.run(null, cfg, TrainConfig.Mode.SINGLE);
        List<Trainer.Result> results = Jccl.runThreads(world, comm -> Trainer.run(comm, cfg, mode));
        for (Trainer.Result r : results) {
            assertFollows(single, r);
            assertArrayEquals(results.get(0).losses, r.losses, 0.0, "every rank reports the same loss");
            // the trained weights too (the pipeline returned its initial ones before)
            assertEquals(single.finalParams.length, r.finalParams.length);
            for (int i = 0; i < r.finalParams.length; i++) {
                float a = single.finalParams[i];
                assertTrue(Math.abs(a - r.finalParams[i]) <= 1e-3 * Math.max(1, Math.abs(a)),
                        mode + " on " + world + " ranks, parameter " + i + ": " + r.finalParams[i] + " vs single " + a);
            }
        }
        assertTrue(maxAbsDiff(single.finalParams, new Mlp(cfg.sizes).initParams(cfg.seed)) > 1e-2,
                "training moved the weights");
    }

    private static double maxAbsDiff(float[] a, float[] b) {
        double d = 0;
        for (int i = 0; i < a.length; i++) {
            d = Math.max(d, Math.abs(a[i] - b[i]));
        }
        return d;
    }

    /** Shards of ceil(N / P) elements: rank r starts at r ceil(N / P), past the end for the last ranks here. */
    @Test
    void shouldShardWhereTheLastRanksOwnNothing() {
        float[] grads = {1, 2, 3, 4, 5};
        float[] expected = {1, 1, 1, 1, 1};
        Optimizer.sgd(0.5f, 0f).step(expected, 0, grads, 0, 5);
        for (float[] p : Jccl.runThreads(4, comm -> { // shards of 2: rank 3 starts at 6 of 5
            ZeroRedundancyOptimizer z = new ZeroRedundancyOptimizer(comm, 5, () -> Optimizer.sgd(0.5f, 0f));
            float[] params = {1, 1, 1, 1, 1};
            z.step(params, grads.clone());
            return params;
        })) {
            assertArrayEquals(expected, p, 0f);
        }
        Mlp tiny = new Mlp(1, 1); // one layer of 2 parameters: shards of 1, rank 3 starts at 3
        Dataset d = new Dataset(3, 4, 1, 1);
        RankBodyOfFsdp step = comm -> { // every rank the same row: the average gradient is that row's
            FullyShardedDataParallel f = new FullyShardedDataParallel(comm, tiny, tiny.initParams(1),
                    () -> Optimizer.sgd(0.1f, 0f));
            f.step(d.inputs(0, 1), d.targets(0, 1), 1);
            return f.gatherParams();
        };
        float[] alone = Jccl.runThreads(1, step::run).get(0);
        assertTrue(maxAbsDiff(alone, tiny.initParams(1)) > 0, "the step moved the weights");
        for (float[] p : Jccl.runThreads(4, step::run)) {
            assertArrayEquals(alone, p, 1e-6f);
        }
    }

    /**
     * FSDP with uneven rows (1, 3 and none of a global batch of 4) follows one rank's step on the whole batch when
     * given the global row count; the averaging step, meant for even rows, does not.
     */
    @Test
    void shouldFollowTheGlobalBatchWithUnevenRowsInFsdp() {
        Mlp model = new Mlp(3, 5, 2);
        Dataset d = new Dataset(7, 4, 3, 2);
        int[] first = {0, 1, 4};
        int[] rows = {1, 3, 0};
        List<double[]> alone = Jccl.runThreads(1, comm -> {
            FullyShardedDataParallel f = new FullyShardedDataParallel(comm, model, model.initParams(1),
                    () -> Optimizer.sgd(0.1f, 0f));
            double loss = f.step(d.inputs(0, 4), d.targets(0, 4), 4);
            return withLoss(f.gatherParams(), loss);
        });
        List<double[]> uneven = Jccl.runThreads(3, comm -> {
            FullyShardedDataParallel f = new FullyShardedDataParallel(comm, model, model.initParams(1),
                    () -> Optimizer.sgd(0.1f, 0f));
            int r = comm.rank();
            double loss = f.step(d.inputs(first[r], rows[r]), d.targets(first[r], rows[r]), rows[r], 4);
            return withLoss(f.gatherParams(), loss);
        });
        double lossSum = 0;
        for (double[] p : uneven) {
            lossSum += p[p.length - 1];
            for (int i = 0; i < p.length - 1; i++) {
                assertEquals(alone.get(0)[i], p[i], 1e-6, "parameter " + i);
            }
        }
        assertEquals(alone.get(0)[alone.get(0).length - 1], lossSum, 1e-6, "the ranks' parts sum to the loss");
        assertThrows(JcclException.class, () -> Jccl.runThreads(2, comm -> new FullyShardedDataParallel(comm, model,
                model.initParams(1), () -> Optimizer.sgd(0.1f, 0f)).step(d.inputs(0, 3), d.targets(0, 3), 3, 2)));
        List<double[]> averaged = Jccl.runThreads(2, comm -> { // 1 and 3 rows, averaged: not the batch's gradient
            FullyShardedDataParallel f = new FullyShardedDataParallel(comm, model, model.initParams(1),
                    () -> Optimizer.sgd(0.1f, 0f));
            int r = comm.rank();
            f.step(d.inputs(first[r], rows[r]), d.targets(first[r], rows[r]), rows[r]);
            return withLoss(f.gatherParams(), 0);
        });
        double off = 0;
        for (int i = 0; i < averaged.get(0).length - 1; i++) {
            off = Math.max(off, Math.abs(averaged.get(0)[i] - alone.get(0)[i]));
        }
        assertTrue(off > 1e-4, "averaging per-rank means of uneven rows differs from the batch's step: " + off);
    }

    private static double[] withLoss(float[] params, double loss) {
        double[] out = new double[params.length + 1];
        for (int i = 0; i < params.length; i++) {
            out[i] = params[i];
        }
        out[params.length] = loss;
        return out;
    }

    @FunctionalInterface
    private interface RankBodyOfFsdp {
        float[] run(io.jccl.Communicator comm);
    }

    /**
     * DDP over shared memory whose registered region has no room for a bucket: that bucket is an array, and the
     * gradients are averaged as before (it failed at construction with "the registered region ... has no room").
     */
    @Test
    void shouldAverageGradientsWhereTheRegisteredRegionIsFull() throws Exception {
        io.jccl.store.InMemoryStore store = new io.jccl.store.InMemoryStore();
        // a thread per rank: the two wait for each other (to connect, then in the allreduces), and the common pool
        // may have one thread (JDK 25 on 2 cores), on which the second rank would wait behind the first for ever
        java.util.concurrent.ExecutorService ranks = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            List<java.util.concurrent.CompletableFuture<io.jccl.Communicator>> comms = new java.util.ArrayList<>();
            for (int r = 0; r < 2; r++) {
                int rank = r;
                comms.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> new io.jccl.pipeline.DefaultCommunicator(
                        io.jccl.transport.shm.ShmTransport.connect(rank, 2, store,
                                io.jccl.transport.shm.ShmTransport.defaultDirectory(), 64 << 10, 1 << 20, 40960,
                                Duration.ofSeconds(30)), CommunicatorConfig.fromEnvironment()), ranks));
            }
            List<java.util.concurrent.CompletableFuture<float[]>> done = new java.util.ArrayList<>();
            for (java.util.concurrent.CompletableFuture<io.jccl.Communicator> f : comms) {
                io.jccl.Communicator comm = f.get(60, TimeUnit.SECONDS);
                done.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    try (comm) {
                        float[] grads = new float[8192 + 16384];
                        // a 32 KiB bucket fits the 40 KiB region (and is read in place: above 16 KiB), a 64 KiB one,
                        // filled first, does not
                        DistributedDataParallel ddp = new DistributedDataParallel(comm, List.of(
                                new DistributedDataParallel.Parameter("small", grads, 0, 8192),
                                new DistributedDataParallel.Parameter("large", grads, 8192, 16384)), 32 << 10, true);
                        assertEquals(2, ddp.bucketCount());
                        assertEquals(1, ddp.allocatedBuckets());
                        java.util.Arrays.fill(grads, comm.rank() * 2 + 1); // 1 and 3: the mean is 2
                        ddp.markReady(1);
                        ddp.markReady(0);
                        ddp.finish();
                        return grads;
                    }
                }, ranks));
            }
            for (java.util.concurrent.CompletableFuture<float[]> f : done) {
                for (float g : f.get(60, TimeUnit.SECONDS)) {
                    assertEquals(2f, g);
                }
            }
        } finally {
            ranks.shutdownNow();
        }
    }

    @Test
    void shouldShardOptimizerStateAcrossRanks() {
        TrainConfig cfg = config("adam");
        cfg.steps = 2;
        long alone = Trainer.run(null, cfg, TrainConfig.Mode.SINGLE).optimizerStateBytes;
        for (Trainer.Result r : Jccl.runThreads(4, comm -> Trainer.run(comm, cfg, TrainConfig.Mode.ZERO))) {
            assertTrue(r.optimizerStateBytes <= alone / 4 + 8 * 4, r.optimizerStateBytes + " vs " + alone);
        }
    }

    @Test
    void shouldReduceEveryBucketExactlyOncePerStepWithSmallTensorsRidingAlong() {
        Mlp model = new Mlp(16, 64, 64, 4);
        int steps = 5;
        List<long[]> counts = Jccl.runThreads(3, comm -> {
            float[] grads = new float[model.totalParams()];
            // an 8 KiB cap: the 64x64 weight (16 KiB) gets a bucket of its own; small tensors ride together,
            // filled in reverse registration order (last layer first)
            DistributedDataParallel ddp = new DistributedDataParallel(comm, Trainer.ddpParameters(model, grads),
                    8 * 1024, true);
            assertEquals(3, ddp.bucketCount());
            assertEquals(List.of(5, 4, 3), ddp.bucketParams(0));
            assertEquals(List.of(2), ddp.bucketParams(1));
            assertEquals(List.of(1, 0), ddp.bucketParams(2));
            for (int s = 0; s < steps; s++) {
                java.util.Arrays.fill(grads, comm.rank() + s);
                for (int p = 5; p >= 0; p--) {
                    ddp.markReady(p);
                }
                ddp.finish();
                float expected = 1 + s; // mean of rank + s over ranks 0..2
                for (float g : grads) {
                    assertEquals(expected, g);
                }
            }
            return ddp.reductionsPerBucket();
        });
        for (long[] c : counts) {
            assertTrue(c.length >= 3, "several buckets");
            for (long n : c) {
                assertEquals(steps, n);
            }
        }
    }

    @Test
    void shouldGiveTheSameResultWithOverlapOffAndAnyBucketSize() {
        TrainConfig cfg = config("sgd");
        cfg.steps = 10;
        Trainer.Result single = Trainer.run(null, cfg, TrainConfig.Mode.SINGLE);
        for (long cap : new long[] {4, 1024, 1 << 30}) {
            for (boolean overlap : new boolean[] {true, false}) {
                cfg.bucketBytes = cap;
                cfg.overlap = overlap;
                for (Trainer.Result r : Jccl.runThreads(2, comm -> Trainer.run(comm, cfg, TrainConfig.Mode.DDP))) {
                    assertFollows(single, r);
                }
            }
        }
    }

    @Test
    void shouldKeepOnlyAboutTwoLayersOfFullParametersInFsdp() {
        TrainConfig cfg = config("sgd");
        cfg.steps = 2;
        Mlp model = new Mlp(cfg.sizes);
        List<Long> peaks = Jccl.runThreads(4, comm -> {
            FullyShardedDataParallel f = new FullyShardedDataParallel(comm, model, model.initParams(1),
                    cfg::newOptimizer);
            Dataset d = new Dataset(2, 24, cfg.sizes[0], cfg.sizes[3]);
            f.step(d.inputs(comm.rank() * 6, 6), d.targets(comm.rank() * 6, 6), 6);
            return f.peakFullFloats();
        });
        int largestLayer = 0;
        for (int l = 0; l < model.layers(); l++) {
            largestLayer = Math.max(largestLayer, model.paramCount(l));
        }
        for (long p : peaks) {
            // one layer's full parameters and gradients at a time, never the whole model's
            assertTrue(p <= 2L * (largestLayer + 3) && p < 2L * model.totalParams(), "peak " + p);
        }
    }

    @Test
    void shouldFailEveryRankWhenOneFailsMidStep() {
        TrainConfig cfg = config("sgd");
        JcclException e = assertThrows(JcclException.class, () -> Jccl.runThreads(4,
                CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(60)), comm -> {
                    TrainConfig mine = config("sgd");
                    if (comm.rank() == 2) {
                        mine.steps = 3; // rank 2 leaves after three steps, as if it crashed
                        Trainer.run(comm, mine, TrainConfig.Mode.DDP);
                        throw new IllegalStateException("rank 2 crashed in step 4");
                    }
                    return Trainer.run(comm, cfg, TrainConfig.Mode.DDP);
                }));
        assertEquals(2, e.rank());
        assertEquals(3, e.getSuppressed().length);
        for (Throwable s : e.getSuppressed()) {
            PeerAbortedException a = assertInstanceOf(PeerAbortedException.class, s);
            assertEquals(2, a.originRank());
            assertTrue(a.reason().contains("rank 2 crashed"), a.reason());
        }
    }
}
