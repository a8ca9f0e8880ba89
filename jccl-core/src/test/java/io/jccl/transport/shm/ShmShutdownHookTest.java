package io.jccl.transport.shm;

import io.jccl.store.InMemoryStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.DisabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A rank's segment must not outlive a SIGTERM of its JVM. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShmShutdownHookTest {

    /** Connects two thread ranks in the directory {@code args[0]}, prints their segment files, then sleeps. */
    public static final class Holder {
        public static void main(String[] args) throws Exception {
            Path dir = Path.of(args[0]);
            InMemoryStore store = new InMemoryStore();
            CompletableFuture<ShmTransport> other = CompletableFuture.supplyAsync(
                    () -> ShmTransport.connect(1, 2, store, dir, 4096, 4096, 0, Duration.ofSeconds(30)),
                    r -> new Thread(r).start());
            ShmTransport t0 = ShmTransport.connect(0, 2, store, dir, 4096, 4096, 0, Duration.ofSeconds(30));
            ShmTransport t1 = other.join();
            System.out.println(t0.segmentFile() + "\n" + t1.segmentFile());
            System.out.flush();
            Thread.sleep(60_000);
        }
    }

    @Test
    @DisabledOnOs(OS.WINDOWS) // destroy() is a SIGTERM elsewhere
    void aSigtermShouldDeleteTheSegments(@TempDir Path dir) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(List.of(java, "-Xmx64m", "-cp", System.getProperty("java.class.path"),
                Holder.class.getName(), dir.toString())).redirectErrorStream(true).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String first = readSegmentLine(out);
            String second = readSegmentLine(out);
            assertNotNull(first, "the holder printed no segment");
            assertNotNull(second, "the holder printed one segment");
            assertTrue(Files.exists(Path.of(first)) && Files.exists(Path.of(second)));
            p.destroy(); // SIGTERM
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the holder did not exit on SIGTERM");
            assertEquals(143, p.exitValue(), "killed by SIGTERM");
            assertFalse(Files.exists(Path.of(first)), "rank 0's segment outlived its JVM");
            assertFalse(Files.exists(Path.of(second)), "rank 1's segment outlived its JVM");
        } finally {
            p.destroyForcibly();
        }
    }

    /** The next line naming a segment file (logging may come first), or null at the end. */
    private static String readSegmentLine(BufferedReader out) throws Exception {
        for (String line = out.readLine(); line != null; line = out.readLine()) {
            if (line.endsWith(".shm")) {
                return line;
            }
        }
        return null;
    }
}
