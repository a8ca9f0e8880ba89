package io.jccl;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The layers of docs/architecture.md, enforced: a class may use classes of its own layer or of layers below it,
 * never above. Read from the main sources (imports and qualified names in code; comments and strings do not
 * count). The public API's vocabulary (the types of package {@code io.jccl} other than the entry point
 * {@link Jccl}, and {@code io.jccl.instrument}, whose counters the API returns) sits at the bottom: every layer
 * may name a {@code DataType} or throw a {@code JcclException}, and the vocabulary itself uses nothing above it.
 * The transports {@code local}, {@code shm} and {@code tcp} stand side by side and never use each other.
 */
class LayeringTest {
    /** Bottom to top. */
    private static final String[][] LAYERS = {
        {"io.jccl#vocabulary", "io.jccl.instrument", "io.jccl.diag"},
        {"io.jccl.security"},
        {"io.jccl.store"},
        {"io.jccl.buffer"},
        {"io.jccl.reduce"},
        {"io.jccl.transport"},
        {"io.jccl.transport.local", "io.jccl.transport.shm", "io.jccl.transport.tcp"},
        {"io.jccl.transport.hybrid"},
        {"io.jccl.step"},
        {"io.jccl.algorithm"},
        {"io.jccl.reference"},
        {"io.jccl.pipeline"},
        {"io.jccl.rendezvous"},
        {"io.jccl#entry"},
    };
    /** The layer whose packages must not use each other. */
    private static final int TRANSPORTS = 6;
    private static final Pattern REFERENCE = Pattern.compile("\\bio\\.jccl((?:\\.[a-z][a-z0-9]*)*)\\.([A-Z]\\w*)");
    private static final Pattern COMMENTS_AND_STRINGS = Pattern.compile(
            "/\\*.*?\\*/|//[^\\n]*|\"(?:\\\\.|[^\"\\\\\\n])*\"|'(?:\\\\.|[^'\\\\\\n])'", Pattern.DOTALL);

    private static String layerKey(String pkg, String cls) {
        if (pkg.equals("io.jccl")) {
            return cls.equals("Jccl") ? "io.jccl#entry" : "io.jccl#vocabulary";
        }
        return pkg;
    }

    private static int layerOf(String key) {
        for (int i = 0; i < LAYERS.length; i++) {
            for (String k : LAYERS[i]) {
                if (k.equals(key)) {
                    return i;
                }
            }
        }
        throw new AssertionError("package " + key + " is in no layer: add it to LayeringTest and docs/architecture.md");
    }

    @Test
    void shouldUseNoLayerAbove() throws IOException {
        Path root = Path.of("src/main/java");
        List<String> violations = new ArrayList<>();
        Map<String, Integer> seen = new LinkedHashMap<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java")
                    && !p.endsWith("module-info.java"))::iterator) {
                String rel = root.relativize(f).toString().replace('/', '.');
                String cls = rel.substring(rel.lastIndexOf('.', rel.length() - 6) + 1, rel.length() - 5);
                String pkg = rel.substring(0, rel.length() - cls.length() - 6);
                String from = layerKey(pkg, cls);
                int fromLayer = layerOf(from);
                seen.merge(from, 1, Integer::sum);
                String code = COMMENTS_AND_STRINGS.matcher(Files.readString(f)).replaceAll(" ");
                if (from.equals("io.jccl#vocabulary") && Pattern.compile("\\bJccl\\s*\\.").matcher(code).find()) {
                    violations.add(pkg + "." + cls + " (the API vocabulary) uses the entry point io.jccl.Jccl");
                }
                Matcher m = REFERENCE.matcher(code);
                while (m.find()) {
                    String toPkg = "io.jccl" + m.group(1);
                    String to = layerKey(toPkg, m.group(2));
                    if (to.equals(from)) {
                        continue;
                    }
                    int toLayer = layerOf(to);
                    boolean sideways = toLayer == fromLayer && fromLayer == TRANSPORTS;
                    if (toLayer > fromLayer || sideways) {
                        violations.add(pkg + "." + cls + " (" + from + ") uses " + toPkg + "." + m.group(2) + " ("
                                + to + (sideways ? ", beside it" : ", above it") + ")");
                    }
                }
            }
        }
        assertTrue(seen.size() > 10, "read too few packages: " + seen);
        assertTrue(violations.isEmpty(), () -> violations.size() + " uses of a layer above:\n"
                + String.join("\n", violations));
    }
}
