package io.jccl.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The test bed's runner of scripts/testbed.sh, with commands that stand in for it (no root needed). */
// a separate thread: a runner blocked reading a pipe (the defect) cannot be interrupted, so only then does the test
// end at its timeout rather than when the command ends
@Timeout(value = 60, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class TestBedTest {

    /**
     * A command that hung (here: it waits for a child that sleeps 2 minutes) held the caller in readAllBytes
     * before waitFor's limit applied, until the test's own timeout, and was left running with its child. It now
     * fails at the limit with what it wrote, and the command and its child are gone.
     */
    @Test
    void aCommandThatHangsIsDestroyedWithItsChildrenAtTheLimit() throws Exception {
        long start = System.nanoTime();
        IOException e = assertThrows(IOException.class, () -> TestBed.run(List.of("bash", "-c",
                "sleep 120 & echo child $!; wait"), Duration.ofSeconds(2)));
        assertTrue(System.nanoTime() - start < 20_000_000_000L, "not at the limit");
        assertTrue(e.getMessage().contains("did not end within 2000 ms"), e.getMessage());
        Matcher m = Pattern.compile("child (\\d+)").matcher(e.getMessage());
        assertTrue(m.find(), e.getMessage());
        long child = Long.parseLong(m.group(1));
        assertFalse(running(child), "the child " + child + " lives");
    }

    /**
     * Whether process {@code pid} runs: alive to {@link ProcessHandle} and not a zombie (a killed child that its new
     * parent has not reaped yet, which a container without an init may never do, is gone for this test).
     */
    private static boolean running(long pid) {
        if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            return false;
        }
        try {
            String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + pid + "/stat"));
            return !stat.substring(stat.lastIndexOf(')') + 1).trim().startsWith("Z");
        } catch (IOException e) {
            return false; // gone meanwhile
        }
    }

    @Test
    void aCommandThatEndsGivesItsOutputOrFailsWithIt() throws Exception {
        assertEquals("out\nerr\n", TestBed.run(List.of("bash", "-c", "echo out; echo err >&2"), Duration.ofSeconds(20)));
        IOException e = assertThrows(IOException.class, () -> TestBed.run(List.of("bash", "-c", "echo why; exit 3"),
                Duration.ofSeconds(20)));
        assertTrue(e.getMessage().contains("exit 3") && e.getMessage().contains("why"), e.getMessage());
    }
}
