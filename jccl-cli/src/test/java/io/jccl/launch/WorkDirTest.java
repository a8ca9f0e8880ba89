package io.jccl.launch;

import org.junit.jupiter.api.Test;

import java.io.File;
import java.nio.file.Paths;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The class path handed to the JVMs a bench or verify job starts is absolute: a bed host starts them in another
 * working directory, and {@code java -jar jccl-cli/target/jccl.jar bench --hosts 2} failed there with "Could not
 * find or load main class io.jccl.cli.Main".
 */
class WorkDirTest {
    @Test
    void shouldMakeEveryClassPathEntryAbsolute() {
        String saved = System.getProperty("java.class.path");
        try {
            System.setProperty("java.class.path", "jccl-cli/target/jccl.jar" + File.pathSeparator + "/opt/x.jar");
            String[] cp = WorkDir.classPath().split(File.pathSeparator);
            assertEquals(2, cp.length);
            assertTrue(Paths.get(cp[0]).isAbsolute(), cp[0]);
            assertEquals(Paths.get("jccl-cli/target/jccl.jar").toAbsolutePath().toString(), cp[0]);
            assertEquals("/opt/x.jar", cp[1]);
        } finally {
            System.setProperty("java.class.path", saved);
        }
    }
}
