package io.jccl.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.jccl.Communicator;
import io.jccl.Jccl;
import io.jccl.train.TrainConfig;
import io.jccl.train.Trainer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** One rank of {@code jccl train --transport shm|tcp}; started by the train command, not by hand. */
@Command(name = "train-worker", hidden = true)
public final class TrainWorkerCommand implements Callable<Integer> {
    @Parameters(index = "0")
    Path dir;

    @Parameters(index = "1")
    String mode;

    @Override
    public Integer call() throws Exception {
        ObjectMapper json = new ObjectMapper();
        TrainConfig cfg = json.readValue(dir.resolve("config.json").toFile(), TrainConfig.class);
        try (Communicator comm = Jccl.fromEnvironment()) {
            Trainer.Result r = Trainer.run(comm, cfg, TrainConfig.Mode.valueOf(mode));
            if (comm.rank() == 0) {
                ObjectNode n = json.createObjectNode();
                n.put("world", r.world);
                n.put("optimizerStateBytes", r.optimizerStateBytes);
                n.set("losses", json.valueToTree(r.losses));
                n.set("stepMillis", json.valueToTree(r.stepMillis));
                json.writeValue(dir.resolve("result.json").toFile(), n);
            }
        }
        return 0;
    }

    static Trainer.Result read(Path file, TrainConfig.Mode mode) throws java.io.IOException {
        JsonNode n = new ObjectMapper().readTree(file.toFile());
        double[] losses = new ObjectMapper().treeToValue(n.get("losses"), double[].class);
        double[] millis = new ObjectMapper().treeToValue(n.get("stepMillis"), double[].class);
        return Trainer.Result.of(mode, n.get("world").asInt(), losses, millis, n.get("optimizerStateBytes").asLong());
    }
}
