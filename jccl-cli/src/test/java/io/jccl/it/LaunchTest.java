package io.jccl.it;

import io.jccl.examples.AllReduceDemo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jccl launch} as a user runs it: a real launcher process starting real rank processes. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LaunchTest {

    private static List<String> launch(List<String> args, int[] status) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(ProcessJob.java(), "-cp", System.getProperty("java.class.path"),
                "io.jccl.cli.Main", "launch"));
        cmd.addAll(args);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        List<String> lines;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            lines = r.lines().collect(Collectors.toList());
        }
        assertTrue(p.waitFor(90, TimeUnit.SECONDS));
        status[0] = p.exitValue();
        return lines;
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void shouldRunTheExampleOnFourRanks(String transport) throws Exception {
        int[] status = new int[1];
        List<String> out = launch(List.of("-n", "4", "--transport", transport, "--", ProcessJob.java(), "-cp",
                System.getProperty("java.class.path"), AllReduceDemo.class.getName(), "4096"), status);
        assertEquals(0, status[0], String.join("\n", out));
        for (int r = 0; r < 4; r++) {
            String prefix = "[rank " + r + "] rank " + r + " of 4 over " + transport + ": allReduce of 4096 floats = 10.0";
            assertTrue(out.stream().anyMatch(l -> l.startsWith(prefix)), prefix + "\n" + String.join("\n", out));
        }
    }

    /** The CPUs in a rank's "[rank r] Cpus_allowed_list: ..." line. */
    private static String cpusOf(List<String> out, int rank) {
        return out.stream().filter(l -> l.startsWith("[rank " + rank + "] Cpus_allowed_list:"))
                .map(l -> l.substring(l.indexOf(':') + 1).trim()).findFirst()
                .orElseThrow(() -> new AssertionError("no CPU list of rank " + rank + ":\n" + String.join("\n", out)));
    }

    /**
     * Ranks in different pid namespaces sharing /dev/shm (containers with {@code --ipc=host}): rank 1 runs in a pid
     * namespace of its own, where rank 0's pid names no process, so by pid it took rank 0 for dead ("rank 0 (pid
     * N) died") while rank 0 slowly made its calls. Liveness now comes from the segment's owner's lock. Needs root
     * (unshare), as CI has.
     */
    @org.junit.jupiter.api.Test
    void ranksInOtherPidNamespacesAreNotTakenForDead() throws Exception {
        String java = ProcessJob.java() + " -cp " + System.getProperty("java.class.path") + " "
                + FaultWorker.class.getName() + " slow 0 20000";
        int[] status = new int[1];
        List<String> out = launch(List.of("-n", "2", "--transport", "shm", "--cpu-bind", "none", "--", "sh", "-c",
                "if [ \"$JCCL_RANK\" = 1 ]; then exec unshare --pid --fork --mount-proc " + java + "; else exec "
                        + java + "; fi"), status);
        String text = String.join("\n", out);
        assertEquals(0, status[0], text);
        assertTrue(out.contains("[rank 0] RESULT ok") && out.contains("[rank 1] RESULT ok"), text);
    }

    /**
     * A rank that exits leaving a process of its own that holds its output (a shell's background job): the launcher
     * waited for that process's end (600 s here) to finish reading the rank's output. It now waits at most 5 s.
     */
    @org.junit.jupiter.api.Test
    void shouldNotWaitForAProcessARankLeftHoldingItsOutput() throws Exception {
        long start = System.nanoTime();
        int[] status = new int[1];
        // the rank says which process it leaves: that one is killed afterwards (by the time the launcher has
        // returned it is nobody's descendant any more), and no other process that happens to run "sleep 617"
        List<String> out = launch(List.of("-n", "1", "--cpu-bind", "none", "--", "sh", "-c",
                "echo started; sleep 617 & echo leftover $!; exit 0"), status);
        try {
            assertEquals(0, status[0], String.join("\n", out));
            assertTrue(out.contains("[rank 0] started"), String.join("\n", out));
            assertTrue(System.nanoTime() - start < 30_000_000_000L, "the launcher waited for the leftover process");
        } finally {
            for (String l : out) {
                if (l.startsWith("[rank 0] leftover ")) {
                    ProcessHandle.of(Long.parseLong(l.substring("[rank 0] leftover ".length()).trim()))
                            .filter(h -> h.info().command().map(c -> c.endsWith("sleep")).orElse(false))
                            .ifPresent(ProcessHandle::destroyForcibly);
                }
            }
        }
        assertTrue(out.stream().anyMatch(l -> l.startsWith("[rank 0] leftover ")), String.join("\n", out));
    }

    /**
     * A rank that is a wrapper (a shell running its program without exec) exits at the launcher's SIGTERM; its own
     * child, here one that ignores SIGTERM, was then nobody's descendant and was never sent SIGKILL, so it outlived
     * the launcher. The launcher now takes the ranks' descendants before it stops them and kills those left after
     * the grace period.
     */
    @org.junit.jupiter.api.Test
    void shouldStopWhatAWrapperRankStartedWhenItStopsTheRanks() throws Exception {
        int[] status = new int[1];
        List<String> out = launch(List.of("-n", "2", "--cpu-bind", "none", "--", "sh", "-c",
                "if [ \"$JCCL_RANK\" = 1 ]; then sleep 2; exit 3; fi; (trap '' TERM; exec sleep 619) & "
                        + "echo grandchild $!; trap 'exit 0' TERM; wait"), status);
        Long pid = null;
        for (String l : out) {
            if (l.startsWith("[rank 0] grandchild ")) {
                pid = Long.parseLong(l.substring("[rank 0] grandchild ".length()).trim());
            }
        }
        try {
            assertEquals(3, status[0], String.join("\n", out));
            assertTrue(pid != null, String.join("\n", out));
            long p = pid;
            long until = System.nanoTime() + 5_000_000_000L; // its end may take the kernel a moment to report
            while (ProcessHandle.of(p).map(ProcessHandle::isAlive).orElse(false) && System.nanoTime() < until) {
                Thread.sleep(20);
            }
            assertTrue(ProcessHandle.of(p).map(h -> !h.isAlive()).orElse(true), "the wrapper's child " + p
                    + " outlived the launcher");
        } finally {
            if (pid != null) {
                ProcessHandle.of(pid).filter(h -> h.info().command().map(c -> c.endsWith("sleep")).orElse(false))
                        .ifPresent(ProcessHandle::destroyForcibly);
            }
        }
    }

    @org.junit.jupiter.api.Test
    void shouldBindEachRankToACpuOfItsOwnWhileTheRanksFitTheCpus() throws Exception {
        int[] mine = io.jccl.launch.Launcher.allowedCpus(java.nio.file.Path.of("/proc/self/status"));
        assertTrue(mine != null && mine.length >= 2, "this test needs 2 CPUs or more");
        int[] status = new int[1];
        List<String> out = launch(List.of("-n", "2", "--", "sh", "-c", "grep Cpus_allowed_list /proc/self/status"),
                status);
        assertEquals(0, status[0], String.join("\n", out));
        assertEquals(Integer.toString(mine[0]), cpusOf(out, 0), String.join("\n", out));
        assertEquals(Integer.toString(mine[1]), cpusOf(out, 1), String.join("\n", out));

        List<String> unbound = launch(List.of("-n", "2", "--cpu-bind", "none", "--", "sh", "-c",
                "grep Cpus_allowed_list /proc/self/status"), status);
        assertEquals(0, status[0], String.join("\n", unbound));
        int[] all = io.jccl.transport.HostCpus.parseList(cpusOf(unbound, 0));
        assertTrue(all != null && all.length == mine.length, String.join("\n", unbound));
    }

    @org.junit.jupiter.api.Test
    void shouldReadCpuListsAsTheKernelWritesThem() {
        org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {0, 1, 2, 3, 6},
                io.jccl.transport.HostCpus.parseList("0-3,6"));
        org.junit.jupiter.api.Assertions.assertArrayEquals(new int[] {5}, io.jccl.transport.HostCpus.parseList("5"));
        org.junit.jupiter.api.Assertions.assertNull(io.jccl.transport.HostCpus.parseList("3-1"));
        org.junit.jupiter.api.Assertions.assertNull(io.jccl.transport.HostCpus.parseList("a"));
        org.junit.jupiter.api.Assertions.assertNull(io.jccl.transport.HostCpus.parseList("1-2-3"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp"})
    void shouldStopEveryRankAndExitWithTheStatusOfTheOneThatFailed(String transport) throws Exception {
        int[] status = new int[1];
        List<String> out = launch(List.of("-n", "3", "--transport", transport, "--", ProcessJob.java(), "-cp",
                System.getProperty("java.class.path"), FaultWorker.class.getName(), "exit", "1", "600000"), status);
        assertEquals(3, status[0], String.join("\n", out));
        assertTrue(out.stream().anyMatch(l -> l.contains("rank 1 failed with exit status 3")), String.join("\n", out));
        // the ranks that were waiting in allReduce were stopped: none of them is still running
        List<Long> pids = out.stream().filter(l -> l.contains("READY rank"))
                .map(l -> Long.parseLong(l.substring(l.lastIndexOf(' ') + 1))).collect(Collectors.toList());
        assertEquals(3, pids.size(), String.join("\n", out));
        for (long pid : pids) {
            assertTrue(ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true), "rank process " + pid + " survived");
        }
    }

    @org.junit.jupiter.api.Test
    void shouldStopEveryRankWhenTheLauncherIsTerminated() throws Exception {
        List<String> cmd = new ArrayList<>(List.of(ProcessJob.java(), "-cp", System.getProperty("java.class.path"),
                "io.jccl.cli.Main", "launch", "-n", "3", "--", ProcessJob.java(), "-cp",
                System.getProperty("java.class.path"), FaultWorker.class.getName(), "stall", "0", "600000"));
        Process launcher = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        List<Long> pids = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(launcher.getInputStream(),
                StandardCharsets.UTF_8))) {
            String l;
            while (pids.size() < 3 && (l = r.readLine()) != null) {
                if (l.contains("READY rank")) {
                    pids.add(Long.parseLong(l.substring(l.lastIndexOf(' ') + 1)));
                }
            }
            launcher.destroy(); // SIGTERM, as an interrupted job would get
            assertTrue(launcher.waitFor(30, TimeUnit.SECONDS));
        }
        assertEquals(3, pids.size());
        for (long pid : pids) {
            assertTrue(ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true), "rank process " + pid + " orphaned");
        }
    }

    /**
     * SIGTERM while the ranks are still starting: the shutdown hook stopped the ranks started so far, and the start
     * loop went on starting the others, which outlived the launcher. No process of the job may be left.
     */
    @org.junit.jupiter.api.Test
    void shouldLeaveNoRankWhenTerminatedWhileStartingThem() throws Exception {
        String mark = "launch-test-" + java.util.UUID.randomUUID();
        ProcessBuilder pb = new ProcessBuilder(ProcessJob.java(), "-cp", System.getProperty("java.class.path"),
                "io.jccl.cli.Main", "launch", "-n", "64", "--cpu-bind", "none", "--", "sleep", "600")
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("JCCL_TEST_MARK", mark); // every rank inherits it
        Process launcher = pb.start();
        try {
            long until = System.nanoTime() + 60_000_000_000L;
            while (launcher.children().findAny().isEmpty()) {
                assertTrue(launcher.isAlive() && System.nanoTime() < until, "no rank started");
                Thread.sleep(1);
            }
            launcher.destroy(); // SIGTERM as soon as the first rank exists
            assertTrue(launcher.waitFor(30, TimeUnit.SECONDS));
            List<Long> left = ranksMarked(mark);
            assertTrue(left.isEmpty(), left.size() + " ranks outlived their launcher: " + left);
        } finally {
            launcher.destroyForcibly();
            for (long pid : ranksMarked(mark)) {
                ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
            }
        }
    }

    /** The live processes whose environment has JCCL_RANK and {@code JCCL_TEST_MARK=mark}. */
    private static List<Long> ranksMarked(String mark) throws java.io.IOException {
        List<Long> pids = new ArrayList<>();
        try (java.nio.file.DirectoryStream<java.nio.file.Path> procs =
                     java.nio.file.Files.newDirectoryStream(java.nio.file.Path.of("/proc"), "[0-9]*")) {
            for (java.nio.file.Path p : procs) {
                List<String> env;
                try {
                    env = List.of(new String(java.nio.file.Files.readAllBytes(p.resolve("environ")),
                            StandardCharsets.UTF_8).split("\0"));
                } catch (java.io.IOException | SecurityException gone) {
                    continue;
                }
                if (env.contains("JCCL_TEST_MARK=" + mark) && env.stream().anyMatch(e -> e.startsWith("JCCL_RANK="))) {
                    pids.add(Long.parseLong(p.getFileName().toString()));
                }
            }
        }
        return pids;
    }

    /** A rank killed with SIGKILL over shm: the launcher stops the others and no segment of the job is left. */
    @org.junit.jupiter.api.Test
    void shouldLeaveNoSegmentWhenARankIsKilled() throws Exception {
        int[] status = new int[1];
        List<String> out = launch(List.of("-n", "4", "--transport", "shm", "--", ProcessJob.java(), "-cp",
                System.getProperty("java.class.path"), FaultWorker.class.getName(), "kill", "2", "600000"), status);
        assertEquals(137, status[0], String.join("\n", out));
        java.util.Set<Long> pids = out.stream().filter(l -> l.contains("READY rank"))
                .map(l -> Long.parseLong(l.substring(l.lastIndexOf(' ') + 1))).collect(Collectors.toSet());
        assertEquals(4, pids.size(), String.join("\n", out));
        List<String> left = ProcessJob.segmentsOwnedBy(pids);
        assertTrue(left.isEmpty(), () -> "left behind: " + left + "\n" + String.join("\n", out));
    }

    /**
     * A segment whose owner is gone, which the launcher never knew of (a wrapper rank's java killed with SIGKILL while
     * the job ran on, its pid never a child's), is removed when the launcher's ranks have ended; a live one is kept.
     */
    @org.junit.jupiter.api.Test
    void shouldRemoveSegmentsOfGoneProcessesWhenItsRanksEnd(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        java.nio.file.Path dead = dir.resolve("jccl-1a2b-1.shm");
        java.nio.file.Path live = dir.resolve("jccl-3c4d-0.shm");
        for (java.nio.file.Path f : List.of(dead, live)) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(io.jccl.transport.shm.ShmSegmentDescriptor.HEADER_LENGTH)
                    .order(java.nio.ByteOrder.nativeOrder());
            b.putInt(io.jccl.transport.shm.ShmSegmentDescriptor.MAGIC_OFFSET,
                    io.jccl.transport.shm.ShmSegmentDescriptor.MAGIC);
            b.putLong(io.jccl.transport.shm.ShmSegmentDescriptor.OWNER_PID_OFFSET,
                    f == dead ? gone.pid() : ProcessHandle.current().pid());
            java.nio.file.Files.write(f, b.array());
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        int status = new io.jccl.launch.Launcher(1, 1, 0, "127.0.0.1", 0, "auto", io.jccl.security.JobSecret.generate(),
                List.of("true"), java.util.Map.of(), new java.io.PrintStream(out, true), dir).run();
        assertEquals(0, status, out.toString());
        assertTrue(!java.nio.file.Files.exists(dead), "a gone process's segment was left behind");
        assertTrue(java.nio.file.Files.exists(live), "a live process's segment was removed");
    }
}
