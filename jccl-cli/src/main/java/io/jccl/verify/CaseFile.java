package io.jccl.verify;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.jccl.DataType;
import io.jccl.ReduceOp;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code cases.json}: the batch of cases handed to the gloo reference script and to jccl's worker processes.
 * {@code {"world": N, "cases": [{"id", "primitive", "dtype", "op", "count", "requestedCount", "root", "seed"}]}}.
 */
final class CaseFile {
    static final String NAME = "cases.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    private CaseFile() {
    }

    static void write(Path dir, int world, List<VerifyCase> cases) throws IOException {
        ObjectNode spec = JSON.createObjectNode();
        spec.put("world", world);
        ArrayNode arr = spec.putArray("cases");
        for (VerifyCase c : cases) {
            ObjectNode n = arr.addObject();
            n.put("id", c.id());
            n.put("primitive", Primitive.of(c.primitive()).torchName());
            n.put("dtype", c.dtype().torchName());
            if (c.op() != null) {
                n.put("op", c.op().name());
            }
            n.put("count", c.count());
            n.put("requestedCount", c.requestedCount());
            n.put("root", c.root());
            n.put("seed", c.seed());
        }
        JSON.writeValue(dir.resolve(NAME).toFile(), spec);
    }

    static List<VerifyCase> read(Path dir) throws IOException {
        JsonNode spec = JSON.readTree(dir.resolve(NAME).toFile());
        int world = spec.get("world").asInt();
        List<VerifyCase> out = new ArrayList<>();
        for (JsonNode n : spec.get("cases")) {
            out.add(new VerifyCase(n.get("id").asInt(), Primitive.parse(n.get("primitive").asText()),
                    DataType.parse(n.get("dtype").asText()), n.has("op") ? ReduceOp.parse(n.get("op").asText()) : null,
                    world, n.get("requestedCount").asInt(), n.get("root").asInt(), n.get("seed").asLong()));
        }
        return out;
    }
}
