package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.OpType;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * AUTO's choices, frozen: {@link AlgorithmSelector#choose} over a grid of cost models, transports, arena sizes,
 * world sizes, operations and byte counts must match {@code auto-choices.txt}, recorded before the algorithm
 * registry replaced the selector's formulas. A change of the model that is meant to change choices regenerates the
 * file: run with {@code -Djccl.snapshot.write=<path>} and review the diff.
 */
class AutoChoiceSnapshotTest {
    private static final String RESOURCE = "auto-choices.txt";

    private static final OpType[] OPS = OpType.values();
    private static final int[] WORLDS = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 33};
    private static final String[] TRANSPORTS = {"local", "shm", "tcp", "other"};
    private static final int[] ARENAS = {0, 8192, 4 << 20};

    private static long[] sizes() {
        List<Long> s = new ArrayList<>();
        s.add(0L);
        for (int k = 0; k <= 30; k++) {
            s.add(1L << k);
            s.add(3L << k);
        }
        s.add(16384L + 1);
        s.add(16384L - 1);
        s.add((4L << 20) + 1);
        return s.stream().mapToLong(Long::longValue).toArray();
    }

    private static CostModel[] models() {
        CostModel slowArena = CostModel.defaults().with("local", "arena", 40, 0.0009).with("shm", "arena", 60, 0.001);
        CostModel fastLinks = CostModel.defaults().with("tcp", "link", 3, 0.00001).with("local", "link", 1, 0.0001)
                .with("shm", "link", 0.5, 0.0003);
        return new CostModel[] {CostModel.defaults(), slowArena, fastLinks};
    }

    static String table() {
        StringBuilder b = new StringBuilder();
        long[] sizes = sizes();
        CostModel[] models = models();
        for (int m = 0; m < models.length; m++) {
            for (String t : TRANSPORTS) {
                for (int arena : ARENAS) {
                    for (int world : WORLDS) {
                        AlgorithmSelector s = new AlgorithmSelector(models[m], t, arena, world);
                        for (OpType op : OPS) {
                            b.append(String.format(Locale.ROOT, "model%d %s arena=%d world=%d %s:", m, t, arena,
                                    world, op.label()));
                            for (long bytes : sizes) {
                                b.append(' ').append(letter(s.choose(op, bytes)));
                            }
                            b.append('\n');
                        }
                    }
                }
            }
        }
        return b.toString();
    }

    private static char letter(Algorithm a) {
        return "ARTDPSHBM".charAt(a.ordinal());
    }

    @Test
    void shouldChooseAsRecorded() throws IOException {
        String now = table();
        String write = System.getProperty("jccl.snapshot.write");
        if (write != null) {
            Files.writeString(Path.of(write), now, StandardCharsets.UTF_8);
        }
        String recorded;
        try (InputStream in = AutoChoiceSnapshotTest.class.getResourceAsStream(RESOURCE)) {
            assertNotNull(in, RESOURCE);
            recorded = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        String[] want = recorded.split("\n");
        String[] got = now.split("\n");
        assertEquals(want.length, got.length, "rows");
        for (int i = 0; i < want.length; i++) {
            assertEquals(want[i], got[i], "row " + i);
        }
    }
}
