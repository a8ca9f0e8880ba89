package io.jccl.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the commands' --help says is what they do. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HelpTest {

    /** {@code jccl COMMAND --help}, its lines joined by single spaces (picocli wraps at 80 columns). */
    static String help(String command) {
        Cli r = Cli.run(command, "--help");
        assertEquals(0, r.status, r.both());
        return r.out.replaceAll("\\s+", " ");
    }

    /**
     * launch --help names every variable a rank is given: it left out JCCL_LOCAL_WORLD_SIZE and JCCL_TRANSPORT, and
     * called JCCL_SECRET a fresh secret, though the environment's is passed on, and required with --nnodes > 1.
     */
    @Test
    void launchHelpNamesEveryVariableTheRanksGet(@TempDir Path dir) throws Exception {
        Path env = FakeProgram.script(dir, "env", "env | grep '^JCCL_' | cut -d= -f1");
        Cli r = Cli.run("launch", "-n", "1", "--cpu-bind", "none", "--", env.toString());
        assertEquals(0, r.status, r.both());
        // the launcher's own, not this JVM's passed on (JCCL_SECRET and JCCL_TRANSPORT are the launcher's anyway)
        Set<String> given = r.out.lines().map(l -> l.replaceFirst("^\\[rank 0\\] ", "").trim())
                .filter(v -> !System.getenv().containsKey(v)).collect(Collectors.toCollection(TreeSet::new));
        assertTrue(given.containsAll(List.of("JCCL_RANK", "JCCL_LOCAL_WORLD_SIZE")), r.both());
        given.addAll(List.of("JCCL_TRANSPORT", "JCCL_SECRET"));
        String help = help("launch");
        for (String v : given) {
            assertTrue(help.contains(v + " ") || help.contains(v + ","), v + " is not in: " + help);
        }
        assertFalse(help.contains("a fresh job secret JCCL_SECRET"), help);
        assertTrue(help.contains("The secret is this environment's JCCL_SECRET (hex) when set, else a fresh one; with "
                + "--nnodes > 1 it must be set, the same on every node"), help);
    }

    /**
     * bench --compare gloo and verify name the interpreter they run, as the variable and its default: bench's said
     * /usr/bin/python3 whatever JCCL_TORCH_PYTHON was, and picocli replaced verify's ${JCCL_TORCH_PYTHON:-...} by
     * its value, so neither named the variable.
     */
    @Test
    void benchAndVerifyNameTheInterpreterTheyRun() {
        for (String command : new String[] {"bench", "verify"}) {
            assertTrue(help(command).contains("${JCCL_TORCH_PYTHON:-/usr/bin/python3}"), command + ": " + help(command));
        }
    }

    /** train --help gives --seed's default and the modes --modes takes (it said neither). */
    @Test
    void trainHelpGivesTheSeedsDefaultAndTheModes() {
        String help = help("train");
        assertTrue(help.contains("Seed of the data and the initial weights (default: 7)."), help);
        assertTrue(help.contains("--modes=MODE[,MODE...] Modes to compare with single-rank training, each at most "
                + "once: ddp, zero, fsdp, pipeline (default:"), help);
    }
}
