package io.jccl;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Settings are read once, at the entry points, and passed down (docs/configuration.md). In the library's main
 * sources (jccl-core and jccl-train; comments and strings do not count):
 * <ol>
 *   <li>only {@link JcclSettings} reads environment variables or system properties;</li>
 *   <li>only the entry points and the environment-reading methods kept for compatibility call
 *   {@link JcclSettings#fromEnvironment()};</li>
 *   <li>nothing but the entry point {@link Jccl} calls those compatibility methods, and nothing calls the
 *   overloads that silently take a default instead of a setting.</li>
 * </ol>
 */
class EnvironmentAccessTest {
    /** Rule 1: the one class that reads the process's environment and system properties. */
    private static final Set<String> READERS = Set.of("io/jccl/JcclSettings.java");

    /** Rule 2: who may call {@code JcclSettings.fromEnvironment()}, and why. */
    private static final Map<String, String> SNAPSHOT_TAKERS = Map.of(
            "io/jccl/Jccl.java", "the entry point: fromEnvironment(), inProcess(n), runThreads(n, body)",
            "io/jccl/CommunicatorConfig.java", "compatibility: CommunicatorConfig.fromEnvironment()",
            "io/jccl/rendezvous/LaunchEnvironment.java", "compatibility: LaunchEnvironment.fromEnvironment()",
            "io/jccl/security/JobSecret.java", "compatibility: JobSecret.fromEnvironment()",
            "io/jccl/transport/tcp/TcpOptions.java", "compatibility: TcpOptions.fromEnvironment(masterHost)",
            "io/jccl/transport/shm/ShmTransport.java", "compatibility: ShmTransport.defaultDirectory()",
            "io/jccl/pipeline/CostModel.java", "compatibility: CostModel.defaultFile(), so CostModel.load()");

    /** Rule 3: calls that read the environment behind the caller's back, or drop a setting for its default. */
    private static final Pattern BYPASS = Pattern.compile(
            "\\b(?:CommunicatorConfig|LaunchEnvironment|JobSecret|TcpOptions)\\s*\\.\\s*fromEnvironment\\s*\\("
            + "|\\bdefaultDirectory\\s*\\(\\s*\\)|\\bdefaultFile\\s*\\(\\s*\\)|\\bCostModel\\s*\\.\\s*load\\s*\\(\\s*\\)"
            + "|\\bspinsFor\\s*\\(\\s*[^,()]*\\)|\\bQueueMesh\\s*\\.\\s*create\\s*\\(\\s*[^,()]*(?:,\\s*[^,()]*)?\\)"
            // their method references: CommunicatorConfig::fromEnvironment, ShmTransport::defaultDirectory
            + "|\\b(?:CommunicatorConfig|LaunchEnvironment|JobSecret|TcpOptions)\\s*::\\s*fromEnvironment\\b"
            + "|\\b\\w+\\s*::\\s*(?:defaultDirectory|defaultFile)\\b");
    /** Where rule 3 does not apply: the entry point, and each compatibility method's own class. */
    private static final Set<String> BYPASS_ALLOWED = Set.of("io/jccl/Jccl.java", "io/jccl/pipeline/CostModel.java");

    /** Calls, and method references ({@code System::getenv}). */
    private static final Pattern READS = Pattern.compile(
            "\\bSystem\\s*(?:\\.|::)\\s*(?:getenv|getProperty|getProperties)\\b"
            + "|\\b(?:Integer\\s*\\.\\s*getInteger|Long\\s*\\.\\s*getLong|Boolean\\s*\\.\\s*getBoolean)\\s*\\("
            + "|\\b(?:Integer\\s*::\\s*getInteger|Long\\s*::\\s*getLong|Boolean\\s*::\\s*getBoolean)\\b");
    private static final Pattern SNAPSHOT = Pattern.compile(
            "\\bJcclSettings\\s*(?:\\.\\s*fromEnvironment(?:Ignoring)?\\s*\\(|::\\s*fromEnvironment(?:Ignoring)?\\b)");
    private static final Pattern COMMENTS_AND_STRINGS = Pattern.compile(
            "/\\*.*?\\*/|//[^\\n]*|\"(?:\\\\.|[^\"\\\\\\n])*\"|'(?:\\\\.|[^'\\\\\\n])'", Pattern.DOTALL);

    @Test
    void shouldReadTheEnvironmentOnlyAtTheEntryPoints() throws IOException {
        List<String> violations = new ArrayList<>();
        int files = 0;
        for (Path root : List.of(Path.of("src/main/java"), Path.of("../jccl-train/src/main/java"))) {
            if (!Files.isDirectory(root)) {
                assertTrue(root.startsWith(".."), "no " + root.toAbsolutePath());
                // jccl-core alone (its own build) has no jccl-train beside it; CI builds the whole project
                assertTrue(!"true".equalsIgnoreCase(System.getenv("CI")), "CI=true but no " + root.toAbsolutePath());
                continue;
            }
            try (Stream<Path> walk = Files.walk(root)) {
                for (Path f : (Iterable<Path>) walk.filter(p -> p.toString().endsWith(".java"))::iterator) {
                    files++;
                    String rel = root.relativize(f).toString().replace('\\', '/');
                    // blanked out, keeping the line breaks so that line numbers stay right
                    String code = COMMENTS_AND_STRINGS.matcher(Files.readString(f))
                            .replaceAll(r -> " " + r.group().replaceAll("[^\\n]", ""));
                    check(violations, rel, code, READS, READERS.contains(rel),
                            "reads the environment or a system property: only JcclSettings may");
                    check(violations, rel, code, SNAPSHOT, SNAPSHOT_TAKERS.containsKey(rel) || READERS.contains(rel),
                            "calls JcclSettings.fromEnvironment() below the entry points: take the settings as a "
                                    + "parameter, or add the class to SNAPSHOT_TAKERS with the reason");
                    check(violations, rel, code, BYPASS, BYPASS_ALLOWED.contains(rel),
                            "reads the environment behind its caller (a fromEnvironment() or default-path method) "
                                    + "or drops a setting for its default: pass the JcclSettings value down");
                }
            }
        }
        assertTrue(files > 50, "read too few files: " + files);
        assertTrue(violations.isEmpty(), () -> violations.size() + " reads of the environment below the entry "
                + "points:\n" + String.join("\n", violations));
    }

    private static void check(List<String> violations, String file, String code, Pattern p, boolean allowed,
                              String why) {
        if (allowed) {
            return;
        }
        Matcher m = p.matcher(code);
        while (m.find()) {
            if (isDeclaration(code, m.start())) {
                continue;
            }
            int line = 1 + (int) code.substring(0, m.start()).chars().filter(c -> c == '\n').count();
            violations.add(file + ":" + line + ": '" + m.group().trim() + "' " + why);
        }
    }

    /**
     * A method's declaration ({@code static Path defaultDirectory()}), not a call: a type name comes before (a
     * generic or array type ending in {@code >} or {@code ]}). A lambda's arrow ({@code () -> defaultFile()}) is
     * not a type: what follows it is a call.
     */
    private static boolean isDeclaration(String code, int at) {
        int i = at - 1;
        while (i >= 0 && Character.isWhitespace(code.charAt(i))) {
            i--;
        }
        if (i >= 1 && code.charAt(i) == '>' && code.charAt(i - 1) == '-') {
            return false; // ->
        }
        int end = i + 1;
        while (i >= 0 && (Character.isJavaIdentifierPart(code.charAt(i)) || code.charAt(i) == '>'
                || code.charAt(i) == ']')) {
            i--;
        }
        String before = code.substring(i + 1, end);
        return !before.isEmpty() && !Set.of("return", "new", "throw", "else", "case", "yield", "assert")
                .contains(before);
    }

    /** The scan itself, on code written here: calls after an arrow and method references are reads too. */
    @Test
    void shouldSeeCallsAfterAnArrowAndMethodReferences() {
        assertEquals(1, violations(READS, "String s = System.getenv(\"X\");").size());
        assertEquals(1, violations(READS, "Function<String, String> f = System::getenv;").size());
        assertEquals(1, violations(READS, "Supplier<String> s = () -> System.getProperty(\"x\");").size());
        assertEquals(1, violations(READS, "map.computeIfAbsent(k, Integer::getInteger);").size());
        assertEquals(0, violations(READS, "// System.getenv(\"X\")\nString s = \"System.getenv\";").size());
        assertEquals(1, violations(SNAPSHOT, "Supplier<JcclSettings> s = JcclSettings::fromEnvironment;").size());
        assertEquals(1, violations(BYPASS, "Supplier<Path> d = () -> defaultDirectory();").size());
        assertEquals(1, violations(BYPASS, "Supplier<Path> d = x->defaultFile();").size());
        assertEquals(1, violations(BYPASS, "Supplier<Path> d = ShmTransport::defaultDirectory;").size());
        assertEquals(1, violations(BYPASS, "Supplier<CommunicatorConfig> c = CommunicatorConfig::fromEnvironment;")
                .size());
        assertEquals(0, violations(BYPASS, "static Path defaultDirectory() {").size());
        assertEquals(0, violations(BYPASS, "static List<Path> defaultFile() {").size());
        assertEquals(0, violations(BYPASS, "static Path[] defaultFile() {").size());
        assertEquals(1, violations(BYPASS, "return defaultFile();").size());
    }

    private static List<String> violations(Pattern p, String source) {
        List<String> violations = new ArrayList<>();
        String code = COMMENTS_AND_STRINGS.matcher(source).replaceAll(r -> " " + r.group().replaceAll("[^\\n]", ""));
        check(violations, "Snippet.java", code, p, false, "");
        return violations;
    }
}
