package io.jccl.verify;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The torch probe ({@code jccl verify}'s default {@code --reference auto}, {@code bench --compare gloo}) has a real
 * time limit: it read the interpreter's output to the end before it waited with its limit, and reading to the end
 * returned only when the interpreter exited, so a {@code JCCL_TORCH_PYTHON} that never answered hung the command.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class TorchProbeTest {

    private static Path script(Path dir, String body) throws Exception {
        return io.jccl.cli.FakeProgram.script(dir, "python", body);
    }

    private static long pid(Path file) throws Exception {
        return io.jccl.cli.FakeProgram.pid(file);
    }

    @Test
    void anInterpreterThatNeverAnswersIsGivenUpAfterTheLimit(@TempDir Path dir) throws Exception {
        Path python = script(dir, "exec sleep 3600");
        String[] why = new String[1];
        long start = System.nanoTime();
        assertNull(GlooReference.find(python.toString(), Duration.ofSeconds(2), why));
        assertEquals(python + " did not answer within 2 s", why[0]);
        assertTrue(System.nanoTime() - start < 15_000_000_000L, "the probe took far longer than its limit");
    }

    /** A wrapper whose child holds the output: the wrapper and its child are both killed. */
    @Test
    void theInterpreterAndWhatItStartedAreKilled(@TempDir Path dir) throws Exception {
        Path pidFile = dir.resolve("child.pid");
        Path python = script(dir, "sleep 3600 &\necho $! > " + pidFile + "\nwait");
        String[] why = new String[1];
        assertNull(GlooReference.find(python.toString(), Duration.ofSeconds(2), why));
        assertTrue(why[0].endsWith("did not answer within 2 s"), why[0]);
        long child = pid(pidFile);
        try {
            assertFalse(ProcessHandle.of(child).map(ProcessHandle::isAlive).orElse(false),
                    "the interpreter's child " + child + " survived");
        } finally {
            ProcessHandle.of(child).ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    /** An interpreter that answers and exits, leaving a process that holds its output: the answer is taken. */
    @Test
    void anAnswerIsTakenWhenALeftoverProcessHoldsTheOutput(@TempDir Path dir) throws Exception {
        Path pidFile = dir.resolve("leftover.pid");
        Path python = script(dir, "(sleep 3600 & echo $! > " + pidFile + ")\necho 9.9.9");
        long child = -1;
        try {
            String[] why = new String[1];
            GlooReference gloo = GlooReference.find(python.toString(), Duration.ofSeconds(20), why);
            child = pid(pidFile);
            assertNotNull(gloo, why[0]);
            assertEquals("9.9.9", gloo.torchVersion());
        } finally {
            long c = child >= 0 ? child : pid(pidFile);
            ProcessHandle.of(c).ifPresent(ProcessHandle::destroyForcibly);
        }
    }
}
