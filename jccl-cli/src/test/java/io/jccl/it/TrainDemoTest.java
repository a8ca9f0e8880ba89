package io.jccl.it;

import io.jccl.cli.Main;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The demo end to end: every mode on ranks as threads and as JVM processes follows single-rank training. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class TrainDemoTest {

    @ParameterizedTest
    @ValueSource(strings = {"threads", "shm", "tcp"})
    void shouldMatchSingleRankTrainingOnEveryTransport(String transport, @TempDir Path dir) throws Exception {
        Path png = dir.resolve("loss.png");
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream old = System.out;
        int status;
        try {
            System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
            status = new CommandLine(new Main()).execute("train", "--ranks", "4", "--steps", "8", "--transport",
                    transport, "--skip-patterns", "--plot", png.toString());
        } finally {
            System.setOut(old);
        }
        String out = buf.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, out);
        for (String mode : new String[] {"ddp", "zero", "fsdp", "pipeline"}) {
            assertTrue(out.lines().anyMatch(l -> l.startsWith("| " + mode + " | 4 |") && l.endsWith("| matches |")),
                    mode + "\n" + out);
        }
        assertTrue(Files.size(png) > 10_000, "a PNG is written");
    }
}
