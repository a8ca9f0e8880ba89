package io.jccl.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.jccl.Algorithm;
import io.jccl.Communicator;
import io.jccl.Jccl;
import io.jccl.OpType;
import io.jccl.bench.Bench;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** One rank of {@code jccl bench --transport shm|tcp}; started by the bench command, not by hand. */
@Command(name = "bench-worker", hidden = true)
public final class BenchWorkerCommand implements Callable<Integer> {
    @Parameters(index = "0")
    Path out;

    @Parameters(index = "1")
    String op;

    @Parameters(index = "2")
    String algorithm;

    @Parameters(index = "3")
    double scale;

    @Parameters(index = "4..*")
    long[] sizes;

    @picocli.CommandLine.Option(names = "--registered")
    boolean registered;

    @picocli.CommandLine.Option(names = "--core-round-trip")
    boolean coreRoundTrip;

    @picocli.CommandLine.Option(names = "--late-peer")
    double latePeer;

    @Override
    public Integer call() throws Exception {
        try (Communicator comm = Jccl.fromEnvironment()) {
            if (latePeer > 0) {
                double[] r = Bench.latePeer(comm, latePeer);
                if (comm.rank() == 0) {
                    new ObjectMapper().writeValue(out.toFile(), r);
                }
                return 0;
            }
            List<Bench.Row> rows = Bench.run(comm, Bench.parse(op), Algorithm.valueOf(algorithm), sizes, scale,
                    registered, coreRoundTrip, null);
            if (comm.rank() == 0) {
                ObjectMapper m = new ObjectMapper();
                ArrayNode arr = m.createArrayNode();
                for (Bench.Row r : rows) {
                    arr.addObject().put("algorithm", r.algorithm).put("bytes", r.bytes).put("count", r.count)
                            .put("timeUs", r.medianUs).put("wrong", r.wrong).put("cpu", Double.isNaN(r.cpuSecondsPerOp) ? -1 : r.cpuSecondsPerOp)
                            .put("inPlaceUs", Double.isNaN(r.inPlaceUs) ? -1 : r.inPlaceUs)
                            .put("coreRoundTripNs", Double.isNaN(r.coreRoundTripNs) ? -1 : r.coreRoundTripNs);
                }
                m.writeValue(out.toFile(), arr);
            }
        }
        return 0;
    }

    static List<Bench.Row> read(Path file, OpType op, int world) throws java.io.IOException {
        List<Bench.Row> rows = new ArrayList<>();
        for (JsonNode n : new ObjectMapper().readTree(file.toFile())) {
            rows.add(new Bench.Row(op, n.get("algorithm").asText(), n.get("bytes").asLong(), n.get("count").asLong(),
                    world, n.get("timeUs").asDouble(), n.get("wrong").asLong(), n.get("cpu").asDouble() < 0 ? Double.NaN : n.get("cpu").asDouble(),
                    n.get("inPlaceUs").asDouble() < 0 ? Double.NaN : n.get("inPlaceUs").asDouble(), null,
                    n.path("coreRoundTripNs").asDouble(-1) < 0 ? Double.NaN : n.path("coreRoundTripNs").asDouble()));
        }
        return rows;
    }
}
