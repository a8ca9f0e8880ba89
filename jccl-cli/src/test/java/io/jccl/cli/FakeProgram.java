package io.jccl.cli;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Shell scripts that stand in for a peer's programs (python, mpicc, mpirun) in the tests of how they are run. */
public final class FakeProgram {
    private FakeProgram() {
    }

    /** An executable script {@code dir/name} running {@code body} under {@code /bin/sh}. */
    public static Path script(Path dir, String name, String body) throws Exception {
        Path s = Files.writeString(dir.resolve(name), "#!/bin/sh\n" + body + "\n");
        assertTrue(s.toFile().setExecutable(true));
        return s;
    }

    /** The process id a script wrote into {@code file}, waiting up to 5 s for it. */
    public static long pid(Path file) throws Exception {
        for (int i = 0; i < 500 && (!Files.exists(file) || Files.readString(file).isBlank()); i++) {
            Thread.sleep(10);
        }
        return Long.parseLong(Files.readString(file).trim());
    }
}
