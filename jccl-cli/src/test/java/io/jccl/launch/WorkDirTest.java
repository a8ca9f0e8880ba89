package io.jccl.launch;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The class path handed to the JVMs a bench or verify job starts is absolute: a bed host starts them in another
 * working directory, and {@code java -jar jccl-cli/target/jccl.jar bench --hosts 2} failed there with "Could not
 * find or load main class io.jccl.cli.Main".
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
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

    /** The jccl-* entries of {@code tmp}. */
    private static List<Path> workDirs(Path tmp) throws Exception {
        try (Stream<Path> s = Files.list(tmp)) {
            return s.filter(p -> p.getFileName().toString().startsWith("jccl-")).collect(Collectors.toList());
        }
    }

    /**
     * Runs {@code jccl ARGS} in a JVM of its own whose temporary directory is {@code tmp}, waits until a directory
     * named {@code prefix}* is there (null: none) and {@code ready} exists (null: at once), sends it SIGTERM, and
     * returns the jccl-* entries left in {@code tmp} once it has exited.
     */
    private static List<Path> terminatedWhileWorking(Path tmp, String prefix, Path ready, Map<String, String> env,
                                                     String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
                "-Djava.io.tmpdir=" + tmp, "-cp", System.getProperty("java.class.path"), "io.jccl.cli.Main"));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(tmp.resolveSibling(
                tmp.getFileName() + ".log").toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        try {
            long until = System.nanoTime() + 60_000_000_000L;
            while ((prefix != null && workDirs(tmp).stream().noneMatch(d -> d.getFileName().toString()
                    .startsWith(prefix))) || (ready != null && !Files.exists(ready))) {
                assertTrue(p.isAlive(), "jccl ended before it made its work directory: "
                        + Files.readString(tmp.resolveSibling(tmp.getFileName() + ".log")));
                assertTrue(System.nanoTime() < until, "no work directory " + prefix + "* in " + tmp);
                Thread.sleep(5);
            }
            p.destroy(); // SIGTERM
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            return workDirs(tmp);
        } finally {
            ProcessTree.kill(p.toHandle());
        }
    }

    /**
     * {@code jccl verify --transport shm} stopped by SIGTERM while its ranks run: their work directory was left in
     * the temporary directory (the try-with-resources that removes it does not unwind on a signal).
     */
    @Test
    void aSignalLeavesNoWorkDirectoryOfTheRanks(@TempDir Path dir) throws Exception {
        Path tmp = Files.createDirectory(dir.resolve("tmp"));
        List<Path> left = terminatedWhileWorking(tmp, "jccl-verify-", null, Map.of(), "verify", "--transport", "shm",
                "--world", "2", "--reference", "java", "--primitive", "all_reduce", "--dtype", "float32", "--op",
                "sum", "--count", "5");
        assertTrue(left.isEmpty(), "left behind: " + left);
    }

    /**
     * {@code jccl verify} stopped by SIGTERM while gloo's reference runs: its directory (the inputs of every case,
     * gigabytes with {@code --count 1048583}) was left, and the interpreter with what it started ran on.
     */
    @Test
    void aSignalLeavesNoGlooDirectoryNorItsProcesses(@TempDir Path dir) throws Exception {
        Path tmp = Files.createDirectory(dir.resolve("tmp"));
        Path child = dir.resolve("worker.pid");
        // answers the torch probe; as the reference script, hangs with a child (as mp.spawn's workers)
        Path python = Files.writeString(dir.resolve("python"), "#!/bin/sh\n"
                + "if [ \"$1\" = -c ]; then echo 9.9.9; exit 0; fi\n"
                + "sleep 3600 &\necho $! > " + child + ".tmp\nmv " + child + ".tmp " + child + "\nwait\n");
        assertTrue(python.toFile().setExecutable(true));
        List<Path> left;
        try {
            left = terminatedWhileWorking(tmp, "jccl-gloo-", child, Map.of("JCCL_TORCH_PYTHON", python.toString()),
                    "verify", "--world", "2", "--primitive", "all_reduce", "--dtype", "float32", "--op", "sum",
                    "--count", "5");
        } finally {
            if (Files.exists(child)) {
                long pid = Long.parseLong(Files.readString(child).trim());
                boolean alive = ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
                ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
                assertFalse(alive, "the gloo reference's worker " + pid + " survived");
            }
        }
        assertTrue(left.isEmpty(), "left behind: " + left);
    }

    /**
     * {@code jccl verify} stopped by SIGTERM while its torch probe waits for an interpreter that does not answer (an
     * import stuck on a network file system, a wrapper waiting on something): the probe's interpreter was no process
     * of a work directory, so it ran on with what it had started, the probe's time limit gone with the JVM.
     */
    @Test
    void aSignalDuringTheTorchProbeLeavesNoInterpreter(@TempDir Path dir) throws Exception {
        Path tmp = Files.createDirectory(dir.resolve("tmp"));
        Path pids = dir.resolve("python.pids");
        Path python = io.jccl.cli.FakeProgram.script(dir, "python", "sleep 3600 &\necho $$ $! > " + pids + ".tmp\n"
                + "mv " + pids + ".tmp " + pids + "\nwait");
        List<Path> left;
        List<Long> survived = new ArrayList<>();
        try {
            left = terminatedWhileWorking(tmp, null, pids, Map.of("JCCL_TORCH_PYTHON", python.toString()), "verify",
                    "--world", "2", "--primitive", "all_reduce", "--dtype", "float32", "--op", "sum", "--count", "5");
        } finally {
            if (Files.exists(pids)) {
                for (String pid : Files.readString(pids).trim().split(" ")) {
                    ProcessHandle.of(Long.parseLong(pid)).filter(ProcessHandle::isAlive).ifPresent(h -> {
                        survived.add(h.pid());
                        h.destroyForcibly();
                    });
                }
            }
        }
        assertTrue(survived.isEmpty(), "the probed interpreter and its child " + Files.readString(pids).trim()
                + ": " + survived + " survived");
        assertTrue(left.isEmpty(), "left behind: " + left);
    }

    /**
     * The JVM exiting while a directory is being made leaves no directory: it was made, then the hook registered (the
     * first time) or checked for; a signal in between had the creating thread remove it, which the JVM does not wait
     * for, or with no hook at all nothing waited (WorkDirTest.aSignalLeavesNoWorkDirectoryOfTheRanks, SIGTERM as
     * soon as jccl-verify-* appeared, once left it). {@link HeldCreate} holds a create after its directory is made
     * and exits meanwhile, with the hook not registered yet ({@code first}) or registered by an earlier directory.
     */
    @Test
    void anExitWhileADirectoryIsMadeLeavesNoDirectory(@TempDir Path dir) throws Exception {
        for (String which : new String[] {"first", "second"}) {
            Path tmp = Files.createDirectory(dir.resolve(which));
            Process p = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"),
                    "-Djava.io.tmpdir=" + tmp, "-cp", System.getProperty("java.class.path"),
                    HeldCreate.class.getName(), which).redirectErrorStream(true)
                    .redirectOutput(dir.resolve(which + ".log").toFile()).start();
            try {
                assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            } finally {
                ProcessTree.kill(p.toHandle());
            }
            String log = Files.readString(dir.resolve(which + ".log"));
            assertEquals(0, p.exitValue(), log);
            assertTrue(log.contains("made " + tmp.resolve("jccl-held-")), log); // the create was held, then exited
            assertEquals(List.of(), workDirs(tmp), which + ": " + log);
        }
    }

    /** Makes a work directory, held after it is made until this JVM has begun to exit: see above. */
    static final class HeldCreate {
        public static void main(String[] args) throws Exception {
            if (args[0].equals("second")) {
                WorkDir.create("jccl-before-").close(); // registers the hook
            }
            java.util.concurrent.CountDownLatch made = new java.util.concurrent.CountDownLatch(1);
            WorkDir.afterMaking = () -> {
                made.countDown();
                try {
                    Thread.sleep(500); // the exit begins meanwhile
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
            Thread creator = new Thread(() -> {
                try {
                    WorkDir.create("jccl-held-");
                } catch (java.io.IOException exiting) {
                    // expected: the JVM is exiting
                }
            });
            creator.start();
            made.await();
            try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
                s.forEach(d -> System.out.println("made " + d));
            }
            System.exit(0); // as SIGTERM: the shutdown hooks run, then the JVM halts whatever its threads do
        }
    }

    /**
     * A worker that fails is reported by the command the user ran: the launcher that verify, bench, tune and train
     * share printed "jccl launch: rank 0 failed ...", naming a command nobody had run.
     */
    @Test
    void aFailedWorkerIsReportedByTheCommandThatRanIt() throws Exception {
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        java.io.PrintStream old = System.err;
        int status;
        try (WorkDir work = WorkDir.create("jccl-test-")) {
            System.setErr(new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8));
            status = work.runWorkers("jccl verify", 1, "shm", "64m", List.of("no-such-command"));
        } finally {
            System.setErr(old);
        }
        String text = err.toString(java.nio.charset.StandardCharsets.UTF_8);
        assertEquals(2, status, text); // the worker's usage error
        assertEquals("jccl verify: rank 0 failed with exit status 2; the other ranks were stopped", text.strip());
    }
}
