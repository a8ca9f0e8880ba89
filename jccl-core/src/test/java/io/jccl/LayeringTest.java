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

import static org.junit.jupiter.api.Assertions.assertEquals;
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

    /** A wildcard import of a package of jccl ({@code import io.jccl.pipeline.*;}): it names no class. */
    private static final Pattern WILDCARD = Pattern.compile(
            "\\bimport\\s+io\\s*\\.\\s*jccl((?:\\s*\\.\\s*[a-z][a-z0-9]*)*)\\s*\\.\\s*\\*\\s*;");

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
                seen.merge(layerKey(pkg, cls), 1, Integer::sum);
                violations.addAll(violations(pkg, cls, Files.readString(f)));
            }
        }
        assertTrue(seen.size() > 10, "read too few packages: " + seen);
        assertTrue(violations.isEmpty(), () -> violations.size() + " uses of a layer above:\n"
                + String.join("\n", violations));
    }

    /** What class {@code cls} of package {@code pkg}, whose source is {@code source}, uses of the layers above. */
    private static List<String> violations(String pkg, String cls, String source) {
        List<String> violations = new ArrayList<>();
        String from = layerKey(pkg, cls);
        int fromLayer = layerOf(from);
        String code = COMMENTS_AND_STRINGS.matcher(source).replaceAll(" ");
        if (from.equals("io.jccl#vocabulary") && Pattern.compile("\\bJccl\\s*\\.").matcher(code).find()) {
            violations.add(pkg + "." + cls + " (the API vocabulary) uses the entry point io.jccl.Jccl");
        }
        Matcher m = REFERENCE.matcher(code);
        while (m.find()) {
            check(violations, pkg, cls, from, fromLayer, "io.jccl" + m.group(1), m.group(2));
        }
        // a wildcard import may bring in any class of the package: it counts as a use of the package (of io.jccl
        // itself, of its vocabulary: a use of the entry point Jccl is a reference of its own)
        Matcher w = WILDCARD.matcher(code);
        while (w.find()) {
            check(violations, pkg, cls, from, fromLayer, "io.jccl" + w.group(1).replaceAll("\\s", ""), "*");
        }
        return violations;
    }

    private static void check(List<String> violations, String pkg, String cls, String from, int fromLayer,
                              String toPkg, String toCls) {
        String to = layerKey(toPkg, toCls);
        if (to.equals(from)) {
            return;
        }
        int toLayer = layerOf(to);
        boolean sideways = toLayer == fromLayer && fromLayer == TRANSPORTS;
        if (toLayer > fromLayer || sideways) {
            violations.add(pkg + "." + cls + " (" + from + ") uses " + toPkg + "." + toCls + " (" + to
                    + (sideways ? ", beside it" : ", above it") + ")");
        }
    }

    /** The scan itself: qualified names and imports, single and wildcard, up and sideways; comments do not count. */
    @Test
    void shouldSeeEveryKindOfUse() {
        assertEquals(List.of(), violations("io.jccl.step", "X", "import io.jccl.transport.Frame;\n"
                + "import io.jccl.buffer.*;\nimport io.jccl.*;\n// import io.jccl.pipeline.*;\n"));
        assertEquals(1, violations("io.jccl.step", "X", "import io.jccl.pipeline.*;\n").size());
        assertEquals(1, violations("io.jccl.step", "X", "import   io.jccl.algorithm .* ;\n").size());
        assertEquals(1, violations("io.jccl.step", "X", "import io.jccl.pipeline.AlgorithmSelector;\n").size());
        assertEquals(1, violations("io.jccl.step", "X", "Object o = io.jccl.rendezvous.Rendezvous.class;").size());
        assertEquals(1, violations("io.jccl.transport.tcp", "X", "import io.jccl.transport.shm.*;\n").size());
        assertEquals(1, violations("io.jccl.transport.tcp", "X", "import static io.jccl.transport.shm.PeerWatch.*;")
                .size());
    }
}
