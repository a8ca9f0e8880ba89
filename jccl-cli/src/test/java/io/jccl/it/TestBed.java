package io.jccl.it;

import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The multi-host test bed (scripts/testbed.sh) from the tests: simulated hosts in network, UTS and mount
 * namespaces of this machine. It needs root; under {@code CI=true} a test that needs it fails instead of skipping.
 */
final class TestBed implements AutoCloseable {
    static final Path SCRIPT = locate();
    final int hosts;

    private static Path locate() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path s = p.resolve("scripts/testbed.sh");
            if (Files.isRegularFile(s)) {
                return s;
            }
        }
        return Path.of("scripts/testbed.sh");
    }

    private TestBed(int hosts) {
        this.hosts = hosts;
    }

    /** Brings up {@code hosts} hosts with the given {@code scripts/testbed.sh up} options. */
    static TestBed up(int hosts, String... options) throws IOException, InterruptedException {
        boolean root = "0".equals(run(List.of("id", "-u")).trim());
        if (!root) {
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                throw new AssertionError("the multi-host tests need root (network namespaces); CI runs as root");
            }
            Assumptions.abort("the multi-host test bed needs root");
        }
        List<String> cmd = new ArrayList<>(List.of("bash", SCRIPT.toString(), "up", Integer.toString(hosts)));
        cmd.addAll(List.of(options));
        TestBed bed = new TestBed(hosts);
        bed.hook = io.jccl.launch.Bed.bringUp(() -> run(cmd), () -> run(List.of("bash", SCRIPT.toString(), "down")),
                "jccl-testbed-down");
        return bed;
    }

    /** Takes the bed down if the JVM exits with it up; removed by {@link #close}. */
    private Thread hook;

    static String address(int host) {
        return "10.213.7." + (host + 1);
    }

    /** Per-rank environment: {@code ranksPerHost} consecutive ranks per host, the master on host 0. */
    Map<Integer, Map<String, String>> env(int ranksPerHost, Map<String, String> extra) {
        Map<Integer, Map<String, String>> m = new HashMap<>();
        for (int r = 0; r < hosts * ranksPerHost; r++) {
            Map<String, String> e = new HashMap<>(extra);
            e.put(ProcessJob.BED_HOST, Integer.toString(r / ranksPerHost));
            e.put("JCCL_MASTER_ADDR", address(0));
            m.put(r, e);
        }
        return m;
    }

    private static String run(List<String> cmd) throws IOException, InterruptedException {
        return run(cmd, Duration.ofSeconds(60));
    }

    /**
     * Runs {@code cmd}, its output (both streams) into a file, for at most {@code limit}: past it, or if this thread
     * is interrupted, the command and every process it started are destroyed, and it fails with what it wrote. (The
     * output used to be read to its end before the wait: a command that hung held the test until its own timeout,
     * and was left running.)
     */
    static String run(List<String> cmd, Duration limit) throws IOException, InterruptedException {
        Path log = Files.createTempFile("jccl-testbed-", ".log");
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
            pb.environment().put(io.jccl.launch.Bed.OWNER_ENV, Long.toString(ProcessHandle.current().pid()));
            Process p = pb.start();
            boolean ended;
            try {
                ended = p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                destroyTree(p);
                throw e;
            }
            if (!ended) {
                destroyTree(p);
                throw new IOException(String.join(" ", cmd) + " did not end within " + limit.toMillis()
                        + " ms (destroyed): " + Files.readString(log, StandardCharsets.UTF_8));
            }
            String out = Files.readString(log, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new IOException(String.join(" ", cmd) + " failed (exit " + p.exitValue() + "): " + out);
            }
            return out;
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /** Destroys {@code p} and every process it started, and waits briefly for them to go. */
    private static void destroyTree(Process p) {
        List<ProcessHandle> all = new ArrayList<>(p.descendants().toList());
        all.add(p.toHandle());
        all.forEach(ProcessHandle::destroyForcibly);
        for (ProcessHandle h : all) {
            try {
                h.onExit().get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                // gone or not, the caller fails saying it was destroyed
            }
        }
    }

    @Override
    public void close() throws IOException {
        Thread h = hook;
        hook = null;
        io.jccl.launch.Bed.takeDown(h, () -> run(List.of("bash", SCRIPT.toString(), "down")));
    }
}
