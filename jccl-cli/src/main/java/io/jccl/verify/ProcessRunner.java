package io.jccl.verify;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.Jccl;
import io.jccl.buffer.Buf;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Runs a batch of cases with every rank a JVM process of its own, started by {@link Launcher} and connected over
 * a real transport ({@code JCCL_TRANSPORT}); each process writes its outputs as files, which are read back and
 * compared exactly as the in-process ones.
 */
final class ProcessRunner implements CaseRunner {
    private final int world;
    private final Algorithm algorithm;
    private final String transport;
    private final Duration timeout;
    /** The test bed the ranks run on, or null (this host). */
    private final io.jccl.launch.Bed bed;

    ProcessRunner(int world, Algorithm algorithm, String transport, Duration timeout) {
        this.world = world;
        this.algorithm = algorithm;
        this.transport = transport;
        this.timeout = timeout;
        this.bed = null;
    }

    /** The ranks on the hosts of {@code bed} ({@code bed.world()} of them), shm within a host, TCP between. */
    ProcessRunner(int world, Algorithm algorithm, io.jccl.launch.Bed bed, Duration timeout) {
        if (world != bed.world()) {
            throw new IllegalArgumentException("the test bed holds " + bed.world() + " ranks, not " + world);
        }
        this.world = world;
        this.algorithm = algorithm;
        this.transport = "auto";
        this.timeout = timeout;
        this.bed = bed;
    }

    private int trafficCount = -1;
    private List<long[]> trafficCounters;

    @Override
    public List<TrafficLaw.Row> traffic(int count) throws IOException, InterruptedException {
        if (trafficCounters == null || trafficCount != TrafficLaw.elements(world, count)) {
            trafficCount = TrafficLaw.elements(world, count);
            runAll(List.of(), (c, o) -> { });
        }
        return TrafficLaw.rows(world, trafficCount, trafficCounters);
    }

    /** Also measures the byte counters, for {@link #traffic}, in the same processes. */
    ProcessRunner measuringTraffic(int count) {
        this.trafficCount = TrafficLaw.elements(world, count);
        return this;
    }

    @Override
    public void runAll(List<VerifyCase> cases, OutcomeSink sink) throws IOException, InterruptedException {
        try (io.jccl.launch.WorkDir work = io.jccl.launch.WorkDir.create("jccl-verify-")) {
            Path dir = work.path();
            CaseFile.write(dir, world, cases);
            List<String> args = List.of("verify-worker", dir.toString(), algorithm.name(),
                    Long.toString(timeout.toMillis()), Integer.toString(trafficCount));
            int status = bed != null ? bed.runWorkers("512m", args, work.log())
                    : work.runWorkers("jccl verify", world, transport, "512m", args);
            if (trafficCount > 0) {
                trafficCounters = new ArrayList<>();
                for (int r = 0; r < world; r++) {
                    Path f = dir.resolve("traffic_" + r + ".txt");
                    if (!Files.exists(f)) {
                        throw new IOException("rank " + r + " reported no byte counters (status " + status + "): "
                                + work.logTail(10));
                    }
                    trafficCounters.add(Arrays.stream(Files.readString(f).trim().split(","))
                            .mapToLong(Long::parseLong).toArray());
                }
            }
            for (VerifyCase c : cases) {
                List<Buf> outputs = new ArrayList<>();
                Throwable error = null;
                for (int r = 0; r < world; r++) {
                    Path out = dir.resolve("out_" + c.id() + "_" + r + ".bin");
                    Path err = dir.resolve("err_" + c.id() + "_" + r + ".txt");
                    if (Files.exists(err)) {
                        outputs.add(null);
                        if (error == null) {
                            error = remoteError(Files.readString(err));
                        }
                    } else if (Files.exists(out)) {
                        outputs.add(BufIO.read(out, c.dtype(), c.outputCount()));
                    } else {
                        outputs.add(null);
                        if (c.hasOutput(r) && error == null) {
                            error = new IOException("rank " + r + " produced nothing for case " + c.id()
                                    + " (workers exited with status " + status + "): " + work.logTail(10));
                        }
                    }
                }
                sink.accept(c, new Outcome(outputs, error, JcclRunner.algorithmFor(algorithm, c.primitive()).name()));
            }
        }
    }

    private static Throwable remoteError(String text) {
        int nl = text.indexOf('\n');
        String cls = nl < 0 ? text : text.substring(0, nl);
        String msg = nl < 0 ? "" : text.substring(nl + 1);
        if (cls.equals(IllegalArgumentException.class.getName())) {
            return new IllegalArgumentException(msg);
        }
        return new IOException(cls + ": " + msg);
    }

    /** The worker side: this process's rank of every case, written to files in {@code dir}. */
    static int worker(Path dir, Algorithm algorithm, Duration timeout, int trafficCount) throws IOException {
        List<VerifyCase> cases = CaseFile.read(dir);
        try (Communicator comm = Jccl.fromEnvironment(CommunicatorConfig.fromEnvironment().withTimeout(timeout))) {
            int r = comm.rank();
            for (VerifyCase c : cases) {
                CollectiveOptions o = CollectiveOptions.DEFAULT.withAlgorithm(
                        JcclRunner.algorithmFor(algorithm, c.primitive()));
                try {
                    Buf out = JcclRunner.runRank(comm, c, o);
                    if (out != null) {
                        BufIO.write(out, dir.resolve("out_" + c.id() + "_" + r + ".bin"));
                    }
                } catch (RuntimeException e) {
                    Files.writeString(dir.resolve("err_" + c.id() + "_" + r + ".txt"),
                            e.getClass().getName() + "\n" + e.getMessage());
                    if (!(e instanceof IllegalArgumentException)) {
                        return 1; // the communicator is aborted; the remaining cases cannot run
                    }
                }
            }
            if (trafficCount > 0) {
                long[] c = TrafficLaw.measureRank(comm, trafficCount, algorithm);
                Files.writeString(dir.resolve("traffic_" + r + ".txt"), Arrays.stream(c)
                        .mapToObj(Long::toString).collect(Collectors.joining(",")));
            }
        }
        return 0;
    }

    @Override
    public void close() {
        // processes end with each batch
    }
}
