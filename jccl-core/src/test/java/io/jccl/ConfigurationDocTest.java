package io.jccl;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/configuration.md lists every setting, and only settings that exist: every {@code JCCL_...} variable named
 * in a string literal of the main sources of every module, in {@code ./jccl} or in a script, and every
 * {@code jccl.} system property, has a row of its table; every variable and property of the table is used.
 */
class ConfigurationDocTest {
    private static final Path REPO = Path.of("..");
    private static final Path PAGE = REPO.resolve("docs/configuration.md");
    private static final List<String> MODULES = List.of("jccl-core", "jccl-train", "jccl-cli");
    /** A comment, a string literal (group 1: its text) or a char literal, whichever starts first. */
    private static final Pattern COMMENT_OR_STRING = Pattern.compile(
            "/\\*.*?\\*/|//[^\\n]*|\"((?:\\\\.|[^\"\\\\\\n])*)\"|'(?:\\\\.|[^'\\\\\\n])'", Pattern.DOTALL);
    private static final Pattern VARIABLE = Pattern.compile("\\bJCCL_[A-Z0-9_]*");
    private static final Pattern PROPERTY = Pattern.compile("jccl(?:\\.[a-z][a-z0-9]*)+");
    private static final Pattern TICKED = Pattern.compile("`([^`]+)`");

    /** Where each name is used: "JCCL_SECRET" -> files. String literals of Java, any word of a script. */
    private static TreeMap<String, Set<String>> used() throws IOException {
        TreeMap<String, Set<String>> used = new TreeMap<>();
        for (String module : MODULES) {
            Path root = REPO.resolve(module).resolve("src/main/java");
            assertTrue(Files.isDirectory(root), "no " + root.toAbsolutePath());
            try (Stream<Path> walk = Files.walk(root)) {
                for (Path f : (Iterable<Path>) walk.filter(p -> p.toString().endsWith(".java"))::iterator) {
                    Matcher s = COMMENT_OR_STRING.matcher(Files.readString(f));
                    while (s.find()) {
                        String literal = s.group(1);
                        if (literal == null) {
                            continue; // a comment or a char
                        }
                        String where = REPO.relativize(f).toString();
                        Matcher v = VARIABLE.matcher(literal);
                        while (v.find()) {
                            used.computeIfAbsent(v.group(), k -> new TreeSet<>()).add(where);
                        }
                        if (PROPERTY.matcher(literal).matches()) {
                            used.computeIfAbsent(literal, k -> new TreeSet<>()).add(where);
                        }
                        if (literal.matches("[A-Z][A-Z0-9_]*")) { // RANK, SLURM_PROCID, ...: not checked one way
                            used.computeIfAbsent("literal:" + literal, k -> new TreeSet<>()).add(where);
                        }
                    }
                }
            }
        }
        List<Path> scripts = new ArrayList<>(List.of(REPO.resolve("jccl"), REPO.resolve(".ci/run")));
        try (Stream<Path> s = Files.list(REPO.resolve("scripts"))) {
            s.filter(p -> p.toString().endsWith(".sh")).forEach(scripts::add);
        }
        scripts.add(REPO.resolve("jccl-cli/src/main/resources/io/jccl/launch/testbed.sh")); // the bed, in the jar
        for (Path f : scripts) {
            if (!Files.exists(f)) {
                // a partial checkout may lack one; CI has the whole repository
                assertTrue(!"true".equalsIgnoreCase(System.getenv("CI")), "CI=true but no " + f.toAbsolutePath());
                continue;
            }
            String text = Files.readString(f);
            Matcher v = VARIABLE.matcher(text);
            while (v.find()) {
                used.computeIfAbsent(v.group(), k -> new TreeSet<>()).add(REPO.relativize(f).toString());
            }
            Matcher w = Pattern.compile("\\$\\{?([A-Z][A-Z0-9_]*)").matcher(text);
            while (w.find()) {
                used.computeIfAbsent("literal:" + w.group(1), k -> new TreeSet<>()).add(REPO.relativize(f).toString());
            }
        }
        return used;
    }

    /** The rows of the page's table, each as its cells. */
    private static List<String[]> rows() throws IOException {
        List<String[]> rows = new ArrayList<>();
        for (String line : Files.readAllLines(PAGE)) {
            if (line.startsWith("|") && !line.startsWith("|---") && !line.startsWith("| variable ")) {
                String[] cells = line.substring(1, line.length() - (line.endsWith("|") ? 1 : 0)).split("\\|", -1);
                rows.add(cells);
            }
        }
        return rows;
    }

    private static List<String> ticked(String cell) {
        List<String> names = new ArrayList<>();
        Matcher m = TICKED.matcher(cell);
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    @Test
    void shouldListEverySettingInOneTableAndNothingElse() throws IOException {
        List<String[]> rows = rows();
        assertTrue(rows.size() >= 20, "too few rows in the table of " + PAGE + ": " + rows.size());
        Set<String> documented = new TreeSet<>();
        Set<String> families = new TreeSet<>(); // JCCL_ALGO_<OP>: the prefix JCCL_ALGO_
        List<String> problems = new ArrayList<>();
        for (String[] cells : rows) {
            if (cells.length != 5) {
                problems.add("a row without the 5 cells variable, system property, default, meaning, read by: "
                        + String.join("|", cells));
                continue;
            }
            List<String> names = ticked(cells[0]);
            if (names.isEmpty() || cells[3].isBlank() || cells[4].isBlank()) {
                problems.add("a row without a variable, a meaning or a reader: " + String.join("|", cells));
            }
            for (String n : names) {
                if (n.endsWith(">")) {
                    families.add(n.substring(0, n.indexOf('<')));
                } else {
                    documented.add(n);
                }
            }
            documented.addAll(ticked(cells[1]));
        }
        TreeMap<String, Set<String>> used = used();
        // the code's names are on the page
        for (var e : used.entrySet()) {
            String name = e.getKey();
            if (name.startsWith("literal:")) {
                continue;
            }
            boolean listed = documented.contains(name) || families.stream().anyMatch(name::startsWith);
            if (!listed) {
                problems.add(name + " (used in " + e.getValue() + ") is not in the table of " + PAGE);
            }
        }
        // the page's names are in the code
        for (String name : documented) {
            if (!used.containsKey(name) && !used.containsKey("literal:" + name)) {
                problems.add(name + " is in the table of " + PAGE + " but no main source or script uses it");
            }
        }
        for (String prefix : families) {
            if (!used.containsKey(prefix)) {
                problems.add(prefix + "<...> is in the table but no main source or script uses the prefix " + prefix);
            }
        }
        assertTrue(problems.isEmpty(), () -> String.join("\n", problems));
        // the settings class and the page agree on which settings have a system property
        assertEquals(Set.of(JcclSettings.TIMEOUT_PROPERTY, JcclSettings.TRACE_PROPERTY),
                documented.stream().filter(n -> n.startsWith("jccl.")).collect(java.util.stream.Collectors.toSet()));
    }
}
