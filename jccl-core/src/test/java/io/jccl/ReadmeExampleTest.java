package io.jccl;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's Java examples, run as written there: each test holds a copy between {@code README block} markers,
 * and {@link #theCopiesAreTheReadmesBlocks} fails when a copy and the README's block differ (indentation aside).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReadmeExampleTest {

    @Test
    void shouldRunTheReadmeExample() {
        // README block 1 begin
        List<float[]> results = Jccl.runThreads(4, comm -> {
            float[] grad = new float[1 << 20];
            java.util.Arrays.fill(grad, comm.rank());
            comm.allReduce(grad, ReduceOp.AVG);                       // in place, every rank gets the mean

            float[] shard = new float[grad.length / comm.size()];     // ZeRO: each rank keeps its shard of the sum
            comm.reduceScatter(Tensor.of(grad), Tensor.of(shard), ReduceOp.SUM);

            Work w = comm.allGatherAsync(Tensor.of(shard), Tensor.of(grad));   // overlap with compute...
            w.await();
            return grad;
        });
        // README block 1 end
        for (float[] g : results) {
            assertEquals(1 << 20, g.length);
            assertEquals(6.0f, g[0]);          // mean 1.5, summed over 4 ranks
            assertEquals(6.0f, g[g.length - 1]);
        }
    }

    /** What the process-group example leaves behind on one rank. */
    private static final class Seen {
        int[] counts;
        byte[][] states;
        float[] fromLeft;
        float[] toRight;
        boolean inPair;
    }

    private static Seen processGroupExample(String initMethod, int rank) throws Exception {
        byte[] myState = new byte[rank * 1000 + 1];
        Arrays.fill(myState, (byte) rank);
        float[] fromLeft = new float[4];
        float[] toRight = {rank, rank, rank, rank};
        Seen seen = new Seen();
        // README block 2 begin
        Communicator world = Jccl.initProcessGroup(ProcessGroupOptions.of(initMethod)
                .withRank(rank).withWorldSize(3).withTimeout(Duration.ofMinutes(5)));
        try (world) {
            int[] counts = {rank, 1};
            world.allReduce(counts);                                  // SUM unless told otherwise: {0+1+2, 3}
            byte[][] states = world.allGatherV(myState);              // every rank's bytes, of any length, in rank order
            List<Work> works = world.batchIsendIrecv(List.of(         // a ring exchange, receives listed first: no deadlock
                    P2POp.irecv(Tensor.of(fromLeft), (rank + 2) % 3, 0),
                    P2POp.isend(Tensor.of(toRight), (rank + 1) % 3, 0)));
            works.forEach(Work::await);
            Communicator pair = world.newGroup(0, 1);                 // torch's new_group; null on rank 2; its ranks: 0, 1
            if (pair != null) {
                try (pair) {
                    pair.broadcast(toRight, 0);
                }
            }
        // README block 2 end
            seen.counts = counts;
            seen.states = states;
            seen.inPair = pair != null;
        }
        seen.fromLeft = fromLeft;
        seen.toRight = toRight;
        return seen;
    }

    @Test
    void shouldRunTheProcessGroupExampleOnThreeRanks() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String init = "tcp://127.0.0.1:" + port;
        List<CompletableFuture<Seen>> ranks = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            int rank = r;
            ranks.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return processGroupExample(init, rank);
                } catch (Exception e) {
                    throw new java.util.concurrent.CompletionException(e);
                }
            }, t -> new Thread(t, "readme-rank-" + rank).start()));
        }
        List<Seen> seen = new ArrayList<>();
        AssertionError failed = null;
        for (int r = 0; r < 3; r++) { // every rank's failure, not only the first: the first is often a consequence
            try {
                seen.add(ranks.get(r).get(60, TimeUnit.SECONDS));
            } catch (java.util.concurrent.ExecutionException e) {
                if (failed == null) {
                    failed = new AssertionError("a rank of the README's process-group example failed");
                }
                failed.addSuppressed(e.getCause());
            }
        }
        if (failed != null) {
            throw failed;
        }
        for (int r = 0; r < 3; r++) {
            Seen s = seen.get(r);
            assertArrayEquals(new int[] {3, 3}, s.counts);
            for (int q = 0; q < 3; q++) {
                assertEquals(q * 1000 + 1, s.states[q].length);
                assertEquals((byte) q, s.states[q][q * 1000]);
            }
            float left = (r + 2) % 3;
            assertArrayEquals(new float[] {left, left, left, left}, s.fromLeft);
            assertEquals(r != 2, s.inPair);
            float sent = r == 2 ? 2 : 0; // the pair's broadcast gives rank 1 rank 0's values
            assertArrayEquals(new float[] {sent, sent, sent, sent}, s.toRight);
        }
    }

    /** The lines between the markers {@code README block n begin} and {@code end} of this file, trimmed. */
    private static List<String> copy(String source, int n) {
        String begin = "// README block " + n + " begin";
        String end = "// README block " + n + " end";
        String body = source.substring(source.indexOf(begin) + begin.length(), source.indexOf(end));
        return trimmed(body);
    }

    private static List<String> trimmed(String text) {
        List<String> lines = new ArrayList<>();
        for (String l : text.split("\n")) {
            if (!l.isBlank()) {
                lines.add(l.strip());
            }
        }
        return lines;
    }

    @Test
    void theCopiesAreTheReadmesBlocks() throws Exception {
        String readme = Files.readString(Path.of("..", "README.md"), StandardCharsets.UTF_8);
        String source = Files.readString(Path.of("src", "test", "java", "io", "jccl", "ReadmeExampleTest.java"),
                StandardCharsets.UTF_8);
        Matcher m = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(readme);
        List<List<String>> blocks = new ArrayList<>();
        while (m.find()) {
            List<String> lines = trimmed(m.group(1));
            lines.removeIf(l -> l.startsWith("import ") || l.startsWith("// 4 ranks as 4 threads"));
            blocks.add(lines);
        }
        assertTrue(blocks.size() >= 2, "the README has its two Java examples");
        assertEquals(blocks.get(0), copy(source, 1), "README's first Java block vs this test's copy");
        List<String> second = new ArrayList<>(copy(source, 2));
        second.add("}"); // the copy keeps the try block open to record what the example left
        assertEquals(blocks.get(1), second, "README's second Java block vs this test's copy");
    }
}
