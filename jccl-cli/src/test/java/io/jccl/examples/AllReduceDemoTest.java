package io.jccl.examples;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.Jccl;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 14, item 11: the demo prints the law of the algorithm that ran, the law is what the counters count, and
 * the README's excerpt of the demo's output is what it prints.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class AllReduceDemoTest {
    private static final String COMMAND = "./jccl launch -n 4 -- java -cp jccl-cli/target/jccl.jar "
            + "io.jccl.examples.AllReduceDemo";
    /** What a rank prints after its counter: the bytes it moved and its law's prediction. */
    private static final Pattern COUNTED = Pattern.compile("(?:wrote|sent) (\\d+) bytes.*, law .* = (\\d+)$");

    /** Every rank's line of {@code jccl launch -n ranks [--transport t] -- java AllReduceDemo [args]}. */
    private static List<String> launch(int ranks, String transport, Map<String, String> env, Path dir,
                                       String... args) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        String cp = System.getProperty("java.class.path");
        List<String> cmd = new ArrayList<>(List.of(java, "-cp", cp, "io.jccl.cli.Main", "launch", "-n",
                Integer.toString(ranks)));
        if (transport != null) {
            cmd.addAll(List.of("--transport", transport));
        }
        cmd.addAll(List.of("--", java, "-cp", cp, AllReduceDemo.class.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        // a fresh machine's AUTO: the built-in cost model, not a tuning file this machine may have
        pb.environment().put("JCCL_TUNE_FILE", dir.resolve("no-tune.properties").toString());
        pb.environment().putAll(env);
        Process p = pb.start();
        List<String> lines;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            lines = r.lines().collect(Collectors.toList());
        }
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), String.join("\n", lines));
        List<String> ranksLines = lines.stream().filter(l -> l.matches("\\[rank \\d+\\] rank \\d+ of .*"))
                .collect(Collectors.toList());
        assertEquals(ranks, ranksLines.size(), String.join("\n", lines));
        for (String l : ranksLines) {
            Matcher m = COUNTED.matcher(l);
            assertTrue(m.find(), l);
            assertEquals(m.group(2), m.group(1), "the counter is not what the law says: " + l);
        }
        return ranksLines;
    }

    /** The README's lines of the demo's output: the block after the command, its {@code [rank} lines. */
    private static List<String> readmeExcerpt(String readme) {
        int at = readme.indexOf(COMMAND + "\n```\n```\n");
        assertTrue(at >= 0, "README.md no longer shows `" + COMMAND + "` followed by its output");
        int start = readme.indexOf("```\n```\n", at) + 8;
        String block = readme.substring(start, readme.indexOf("```", start));
        return block.lines().filter(l -> l.startsWith("[rank")).collect(Collectors.toList());
    }

    @Test
    void theReadmeShowsWhatTheDemoPrints(@TempDir Path dir) throws Exception {
        String readme = Files.readString(Path.of("..", "README.md"));
        List<String> excerpt = readmeExcerpt(readme);
        assertTrue(excerpt.size() >= 2, excerpt.toString());
        List<String> out = launch(4, null, Map.of(), dir);
        for (String line : excerpt) {
            assertTrue(out.contains(line), "README.md shows\n" + line + "\nbut the demo printed\n"
                    + String.join("\n", out));
        }
        // and what it says of the same demo over TCP
        List<String> tcp = launch(4, "tcp", Map.of(), dir);
        for (String line : tcp) {
            String tail = line.substring(line.indexOf(" by "));
            assertTrue(readme.contains("`" + tail.substring(1) + "`"), "README.md does not say `" + tail.substring(1)
                    + "`\n" + String.join("\n", tcp));
        }
    }

    /** Two ranks, and rounds of a small exchange buffer, the last one small: the law still is the counter. */
    @Test
    void theLawHoldsForOtherWorldSizesAndRounds(@TempDir Path dir) throws Exception {
        launch(2, null, Map.of(), dir);
        // 36,000 floats in rounds of 16,384: two large rounds and one of 12,928 bytes
        List<String> rounds = launch(3, "shm", Map.of("JCCL_SHM_ARENA_BYTES", "65536"), dir, "36000");
        assertTrue(rounds.get(0).contains("law T = 144000"), rounds.toString());
        launch(3, "tcp", Map.of(), dir, "4099");
    }

    /** On ranks as threads, every algorithm with a law, at world sizes 1 to 6 and even and uneven counts. */
    @ParameterizedTest
    @EnumSource(value = Algorithm.class, names = {"RING", "ORDERED", "TREE", "HALVING_DOUBLING", "SHARED_MEMORY"})
    void theLawIsWhatTheCountersCount(Algorithm algorithm) {
        for (int world = 1; world <= 6; world++) {
            for (int count : new int[] {1, 7, 1000, 4099, 100_003}) {
                int p = world;
                List<long[]> sent = Jccl.runThreads(world, comm -> {
                    comm.counters().reset();
                    comm.allReduce(Tensor.of(new float[count]), ReduceOp.SUM,
                            CollectiveOptions.DEFAULT.withAlgorithm(algorithm));
                    return new long[] {comm.counters().bytesSent(OpType.ALL_REDUCE)};
                });
                for (int r = 0; r < p; r++) {
                    AllReduceLaw law = AllReduceLaw.of(algorithm, p, r, count, 4, true);
                    assertNotNull(law);
                    assertEquals(law.bytes(), sent.get(r)[0], algorithm + " world " + p + " rank " + r + " count "
                            + count + ": law " + law.formula());
                }
            }
        }
    }
}
