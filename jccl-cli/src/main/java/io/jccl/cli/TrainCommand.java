package io.jccl.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.jccl.Jccl;
import io.jccl.launch.WorkDir;
import io.jccl.train.TrainConfig;
import io.jccl.train.Trainer;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.File;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code jccl train}: the end-to-end demo. */
@Command(name = "train", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {
            "Trains a small MLP (16-64-64-4, tanh, MSE) on a generated regression set, once on a single rank with the "
                + "whole global batch and then with each of DDP (bucketed allreduce overlapped with backward), ZeRO "
                + "(sharded gradients and optimizer state), FSDP (per-layer sharded parameters) and a pipeline (stage "
                + "groups from split), on N ranks as threads or as processes. Prints each mode's loss against the "
                + "single-rank loss, step time and throughput, the measured effect of bucketing and of overlap, "
                + "and writes the loss curves to a PNG. Exit status 1 if a mode leaves the single-rank curve by more "
                + "than 1e-4 (relative, or absolute where the loss is below 1). With --ranks even the pipeline has 2 stages, "
                + "with --ranks a multiple of 3 (and odd) 3 stages. Progress goes to stderr, one line per training run."})
public final class TrainCommand implements Callable<Integer> {
    static final double TOLERANCE = 1e-4;

    @Option(names = "--ranks", defaultValue = "4", description = "Ranks: a divisor of the global batch (96) for ddp, "
            + "zero, fsdp and the bucketing and overlap measurement (unless --skip-patterns); for the pipeline, "
            + "a multiple of 2 or 3 whose stage size divides 96 (default: ${DEFAULT-VALUE}).")
    int ranks;

    @Option(names = "--modes", split = ",", defaultValue = "ddp,zero,fsdp,pipeline", paramLabel = "MODE",
            description = "Modes to compare with single-rank training, each at most once: ddp, zero, fsdp, "
                + "pipeline (default: ${DEFAULT-VALUE}).")
    List<String> modes;

    @Option(names = "--transport", defaultValue = "threads", paramLabel = "threads|shm|tcp",
            converter = Options.Transport.class,
            description = "threads (one JVM), shm or tcp (a JVM per rank) (default: ${DEFAULT-VALUE}).")
    String transport;

    @Option(names = "--steps", defaultValue = "40", description = "Training steps (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--optimizer", defaultValue = "sgd", description = "sgd (momentum 0.9) or adam "
            + "(default: ${DEFAULT-VALUE}).")
    String optimizer;

    @Option(names = "--plot", defaultValue = "train-loss.png", description = "PNG of the loss curves "
            + "(default: ${DEFAULT-VALUE}).")
    File plot;

    @Option(names = "--skip-patterns",
            description = "Skip measuring bucketing and overlap on a 34-tensor MLP.")
    boolean skipPatterns;

    @Option(names = "--seed", defaultValue = "7", description = "Seed of the data and the initial weights "
            + "(default: ${DEFAULT-VALUE}).")
    long seed;

    private TrainConfig config() {
        TrainConfig c = new TrainConfig();
        c.steps = steps;
        c.optimizer = optimizer;
        c.seed = seed;
        if (optimizer.equals("adam")) {
            c.lr = 0.01f;
        }
        c.stages = stagesFor(ranks);
        return c;
    }

    /**
     * The pipeline's stages on {@code ranks}: 2 where even, else 3 where a multiple of 3 (the MLP has 3 layers); 1
     * otherwise (one rank: the whole model; other counts are refused).
     */
    static int stagesFor(int ranks) {
        return ranks % 2 == 0 ? 2 : ranks % 3 == 0 ? 3 : 1;
    }

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    private Progress progress;
    private int runsDone;
    private int runsTotal;

    @Override
    public Integer call() throws Exception {
        Options.atLeast(spec, "--ranks", ranks, 1);
        Options.atLeast(spec, "--steps", steps, 1);
        List<TrainConfig.Mode> parsed = Options.parseAll(spec, "--modes", modes, TrainConfig.Mode::parse,
                "ddp, zero, fsdp, pipeline");
        if (parsed.contains(TrainConfig.Mode.SINGLE)) {
            throw Options.usage(spec, "Invalid value for option '--modes': single is the reference every run "
                    + "is compared with, not a mode to give");
        }
        Options.once(spec, "--modes", parsed, m -> m.name().toLowerCase(Locale.ROOT));
        if (!optimizer.equals("sgd") && !optimizer.equals("adam")) {
            throw Options.usage(spec, "Invalid value for option '--optimizer': '" + optimizer + "' (sgd or adam)");
        }
        int batch = new TrainConfig().batch;
        boolean splitsBatch = !skipPatterns || parsed.stream().anyMatch(m -> m != TrainConfig.Mode.PIPELINE);
        if (splitsBatch && batch % ranks != 0) {
            throw Options.usage(spec, "Invalid value for option '--ranks': " + ranks + " does not divide the global "
                    + "batch of " + batch + " rows, which ddp, zero, fsdp and the DDP patterns split among the ranks");
        }
        if (parsed.contains(TrainConfig.Mode.PIPELINE)) {
            int stages = stagesFor(ranks);
            if (stages == 1 && ranks > 1) {
                throw Options.usage(spec, "Invalid value for option '--ranks': the pipeline cuts the 3-layer MLP into "
                        + "2 or 3 stages of equal rank counts, so it needs a multiple of 2 or 3, got " + ranks
                        + " (or leave pipeline out of --modes)");
            }
            if (batch % (ranks / stages) != 0) {
                throw Options.usage(spec, "Invalid value for option '--ranks': the pipeline's " + stages + " stages of "
                        + ranks / stages + " ranks split the batch of " + batch + " rows among each stage's ranks, "
                        + "which " + ranks / stages + " does not divide");
            }
        }
        Options.output(spec, "--plot", plot, false);
        progress = Progress.of("jccl train");
        runsTotal = 1 + parsed.size() + (skipPatterns ? 0 : 4);
        PrintStream out = System.out;
        TrainConfig cfg = config();
        progress.update(0, runsTotal, "single rank");
        Trainer.Result single = Trainer.run(null, cfg, TrainConfig.Mode.SINGLE);
        progress.step(++runsDone, runsTotal, "single rank trained");
        Map<String, Trainer.Result> results = new LinkedHashMap<>();
        results.put("single", single);
        for (int i = 0; i < parsed.size(); i++) {
            results.put(parsed.get(i).name().toLowerCase(Locale.ROOT), run(cfg, parsed.get(i)));
        }
        progress.clear();
        out.printf(Locale.ROOT, "jccl train: MLP %s, global batch %d, %d steps, %s, %d ranks as %s%s%n%n",
                Arrays.toString(cfg.sizes), cfg.batch, cfg.steps, cfg.optimizer, ranks,
                transport.equals("threads") ? "threads" : "processes over " + transport,
                parsed.contains(TrainConfig.Mode.PIPELINE) ? "; pipeline: " + cfg.stages + " stages of "
                        + ranks / cfg.stages + " ranks" : "");
        out.println("| mode | ranks | loss at step 0 | final loss | max abs diff vs single | median step ms | "
                + "samples/s | optimizer state bytes/rank | verdict |");
        out.println("|---|---|---|---|---|---|---|---|---|");
        boolean ok = true;
        for (Map.Entry<String, Trainer.Result> e : results.entrySet()) {
            Trainer.Result r = e.getValue();
            double maxDiff = 0;
            boolean within = true;
            for (int t = 0; t < r.losses.length; t++) {
                double d = Math.abs(r.losses[t] - single.losses[t]);
                maxDiff = Math.max(maxDiff, d);
                within &= d <= TOLERANCE * Math.max(1, Math.abs(single.losses[t]));
            }
            ok &= within;
            double med = median(r.stepMillis);
            out.printf(Locale.ROOT, "| %s | %d | %.6f | %.6f | %.2e | %.3f | %.0f | %d | %s |%n", e.getKey(), r.world,
                    r.losses[0], r.losses[r.losses.length - 1], maxDiff, med, cfg.batch / (med / 1000),
                    r.optimizerStateBytes, e.getKey().equals("single") ? "reference" : within ? "matches" : "DIFFERS");
        }
        writePlot(results, plot);
        progress.wrote(plot);
        out.println();
        out.println("loss curves: " + plot.getAbsolutePath());
        if (!skipPatterns) {
            out.println();
            measurePatterns(out);
        }
        out.println();
        out.println(ok ? "RESULT: every mode matches single-rank training within " + TOLERANCE
                : "RESULT: a mode differs from single-rank training");
        return ok ? 0 : 1;
    }

    /** Bucketing against one allreduce per tensor, and overlap on against off, on a model with many tensors. */
    private void measurePatterns(PrintStream out) throws Exception {
        TrainConfig deep = config();
        int[] sizes = new int[18];
        sizes[0] = 16;
        Arrays.fill(sizes, 1, 17, 64);
        sizes[17] = 4;
        deep.sizes = sizes;
        deep.steps = Math.max(steps, 30);
        double bucketed = median(run(deep, TrainConfig.Mode.DDP).stepMillis);
        deep.bucketBytes = 4; // every tensor alone: one allreduce per tensor
        double perTensor = median(run(deep, TrainConfig.Mode.DDP).stepMillis);
        deep.bucketBytes = 64 * 64 * 4 * 2; // about two layers per bucket, so that overlap has something to overlap
        double overlapOn = median(run(deep, TrainConfig.Mode.DDP).stepMillis);
        deep.overlap = false;
        double overlapOff = median(run(deep, TrainConfig.Mode.DDP).stepMillis);
        progress.clear();
        out.printf(Locale.ROOT, "DDP production patterns, MLP of %d layers (%d tensors), %d ranks as %s, median step:%n",
                sizes.length - 1, 2 * (sizes.length - 1), ranks, transport);
        out.println("| comparison | A ms | B ms | B / A |");
        out.println("|---|---|---|---|");
        out.printf(Locale.ROOT, "| A: buckets of 25 MB (1 bucket) vs B: one allreduce per tensor | %.3f | %.3f | %.2f |%n",
                bucketed, perTensor, perTensor / bucketed);
        out.printf(Locale.ROOT, "| A: overlap on vs B: overlap off (32 KiB buckets) | %.3f | %.3f | %.2f |%n",
                overlapOn, overlapOff, overlapOff / overlapOn);
    }

    /** One training run, with a progress step when it ends. */
    private Trainer.Result run(TrainConfig cfg, TrainConfig.Mode mode) throws Exception {
        String what = mode.name().toLowerCase(Locale.ROOT) + " on " + ranks + " ranks";
        progress.update(runsDone, runsTotal, what);
        Trainer.Result r = train(cfg, mode);
        progress.step(++runsDone, runsTotal, what + " trained");
        return r;
    }

    private Trainer.Result train(TrainConfig cfg, TrainConfig.Mode mode) throws Exception {
        if (transport.equals("threads")) {
            return Jccl.runThreads(ranks, comm -> Trainer.run(comm, cfg, mode)).get(0);
        }
        try (WorkDir work = WorkDir.create("jccl-train-")) {
            new ObjectMapper().writeValue(work.resolve("config.json").toFile(), cfg);
            int status = work.runWorkers("jccl train", ranks, transport, "256m", List.of("train-worker",
                    work.path().toString(), mode.name()));
            Path result = work.resolve("result.json");
            if (status != 0 || !Files.exists(result)) {
                throw new IllegalStateException(mode + " over " + transport + " failed (status " + status + "): "
                        + work.logTail(30));
            }
            return TrainWorkerCommand.read(result, mode);
        }
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        int n = s.length;
        return n == 0 ? Double.NaN : n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    static void writePlot(Map<String, Trainer.Result> results, File file) throws java.io.IOException {
        XYSeriesCollection data = new XYSeriesCollection();
        for (Map.Entry<String, Trainer.Result> e : results.entrySet()) {
            XYSeries s = new XYSeries(e.getKey() + " (" + e.getValue().world + " rank"
                    + (e.getValue().world == 1 ? "" : "s") + ")");
            double[] l = e.getValue().losses;
            for (int t = 0; t < l.length; t++) {
                s.add(t, l[t]);
            }
            data.addSeries(s);
        }
        JFreeChart chart = ChartFactory.createXYLineChart("Training loss: single rank vs distributed (curves coincide)",
                "step", "MSE loss (global batch)", data, PlotOrientation.VERTICAL, true, false, false);
        org.jfree.chart.plot.XYPlot plot = (org.jfree.chart.plot.XYPlot) chart.getPlot();
        plot.setBackgroundPaint(java.awt.Color.WHITE);
        plot.setDomainGridlinePaint(java.awt.Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(java.awt.Color.LIGHT_GRAY);
        org.jfree.chart.renderer.xy.XYLineAndShapeRenderer renderer =
                new org.jfree.chart.renderer.xy.XYLineAndShapeRenderer(true, false);
        for (int i = 0; i < data.getSeriesCount(); i++) {
            // widest first, so that every curve stays visible where they coincide
            renderer.setSeriesStroke(i, new java.awt.BasicStroke(Math.max(1f, 10f - 2f * i)));
        }
        plot.setRenderer(renderer);
        plot.setSeriesRenderingOrder(org.jfree.chart.plot.SeriesRenderingOrder.FORWARD);
        ChartUtils.saveChartAsPNG(file, chart, 900, 540);
    }
}
