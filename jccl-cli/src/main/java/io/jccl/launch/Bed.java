package io.jccl.launch;

import io.jccl.security.JobSecret;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The multi-host test bed as the tools use it ({@code jccl bench --hosts H --ranks-per-host L --link RATE}): H
 * simulated hosts on this machine, each in its own network, UTS and mount namespace (own address 10.213.7.i+1, host
 * name, {@code /dev/shm} and {@code /etc/hosts}; the names do not resolve), joined by a bridge, each host's egress
 * optionally limited by {@code tc tbf}. The script that builds it ({@code testbed.sh}) ships in this jar;
 * {@code scripts/testbed.sh} runs the same file from the source tree. Needs root.
 */
public final class Bed implements AutoCloseable {
    /** The most hosts a bed has (testbed.sh's limit: one /24 of addresses, bridge ports, one tmpfs each). */
    public static final int MAX_HOSTS = 16;

    private final int hosts;
    private final int ranksPerHost;
    private final String link;
    private final Path script;

    private Bed(int hosts, int ranksPerHost, String link, Path script) {
        this.hosts = hosts;
        this.ranksPerHost = ranksPerHost;
        this.link = link;
        this.script = script;
    }

    /**
     * Brings up {@code hosts} hosts, their links limited to {@code link} (a tc rate such as {@code 1gbit}) or
     * unlimited when it is null.
     *
     * @throws IllegalStateException naming what is missing (root, ip, tc, unshare) when the bed cannot be built
     */
    public static Bed up(int hosts, int ranksPerHost, String link) throws IOException, InterruptedException {
        if (hosts < 2 || hosts > MAX_HOSTS || ranksPerHost < 1) {
            throw new IllegalArgumentException("a test bed needs 2 to " + MAX_HOSTS + " --hosts and --ranks-per-host "
                    + ">= 1, got hosts=" + hosts + ", ranks-per-host=" + ranksPerHost);
        }
        if (link != null && !link.toLowerCase(Locale.ROOT).matches("[0-9]+(\\.[0-9]+)?[kmg]?bit")) {
            throw new IllegalArgumentException("--link takes a rate such as 1gbit or 100mbit, got '" + link + "'");
        }
        Path script = extract();
        Bed bed = new Bed(hosts, ranksPerHost, link, script);
        List<String> cmd = new ArrayList<>(List.of("bash", script.toString(), "up", Integer.toString(hosts)));
        if (link != null) {
            cmd.addAll(List.of("--rate", link));
        }
        try {
            bed.hook = bringUp(() -> bed.run(cmd), bed::down, "jccl-bed-down");
        } catch (IOException | RuntimeException | InterruptedException e) {
            Files.deleteIfExists(script);
            throw e;
        }
        return bed;
    }

    /** One step of the bed's script (up or down). */
    @FunctionalInterface
    public interface Step {
        void run() throws IOException, InterruptedException;
    }

    /**
     * Brings a bed up with {@code up}, a shutdown hook named {@code name} running {@code down} registered first: a
     * program stopped by a signal (SIGTERM, Ctrl-C) does not unwind its try-with-resources, and without the hook the
     * namespaces, links, tmpfs mounts and the processes on them stayed until the next bed's "up". If {@code up}
     * fails, {@code down} takes down whatever came up and the hook goes. Returns the hook, which the bed's close
     * removes.
     */
    public static Thread bringUp(Step up, Step down, String name) throws IOException, InterruptedException {
        Thread hook = new Thread(() -> {
            try {
                down.run();
            } catch (IOException | RuntimeException | InterruptedException ignored) {
                // exiting: nothing else to do
            }
        }, name);
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            up.run();
        } catch (IOException | RuntimeException | InterruptedException e) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
                down.run(); // whatever came up goes down
            } catch (IOException | RuntimeException | InterruptedException suppressed) {
                e.addSuppressed(suppressed); // exiting (IllegalStateException: the hook takes it down), or down failed
            }
            throw e;
        }
        return hook;
    }

    private static Path extract() throws IOException {
        Path script = Files.createTempFile("jccl-testbed-", ".sh");
        script.toFile().deleteOnExit();
        try (InputStream in = Bed.class.getResourceAsStream("testbed.sh")) {
            if (in == null) {
                throw new IllegalStateException("testbed.sh is missing from the jar");
            }
            Files.copy(in, script, StandardCopyOption.REPLACE_EXISTING);
        }
        return script;
    }

    public int hosts() {
        return hosts;
    }

    public int ranksPerHost() {
        return ranksPerHost;
    }

    public int world() {
        return hosts * ranksPerHost;
    }

    /** The rate limit of every host's link, or null. */
    public String link() {
        return link;
    }

    /** Host {@code i}'s address on the bed. */
    public static String address(int i) {
        return "10.213.7." + (i + 1);
    }

    /** The command prefix that runs a command on host {@code i}, in all of its namespaces. */
    public List<String> on(int i) {
        return List.of("bash", script.toString(), "exec", Integer.toString(i));
    }

    /**
     * Runs a job of {@link #world()} JVMs of {@code io.jccl.cli.Main <args>}, {@link #ranksPerHost()} consecutive
     * ranks per host, through one {@code jccl launch} per host (the master on host 0, one job secret); every
     * launcher's output goes to {@code log}. Returns 0, or the first non-zero status (the other hosts' launchers are
     * then stopped, and they stop their ranks).
     */
    public int runWorkers(String maxHeap, List<String> args, Path log) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        String cp = WorkDir.classPath();
        int port = 29_000 + new java.security.SecureRandom().nextInt(2_000);
        JobSecret secret = JobSecret.generate();
        List<Process> launchers = new ArrayList<>();
        try (PrintStream out = new PrintStream(Files.newOutputStream(log), true, StandardCharsets.UTF_8)) {
            List<Thread> pumps = new ArrayList<>();
            for (int h = 0; h < hosts; h++) {
                List<String> cmd = new ArrayList<>(on(h));
                // unbound: the hosts share this machine's CPUs, and each host's launcher binding its local rank i to
                // the i-th CPU put rank i of every host on one CPU (every rank on CPU 0 with one rank per host)
                cmd.addAll(List.of(java, "-cp", cp, "io.jccl.cli.Main", "launch", "--cpu-bind", "none",
                        "-n", Integer.toString(ranksPerHost),
                        "--nnodes", Integer.toString(hosts), "--node-rank", Integer.toString(h), "--master-addr",
                        address(0), "--master-port", Integer.toString(port), "--", java, "-Xmx" + maxHeap, "-cp", cp,
                        "io.jccl.cli.Main"));
                cmd.addAll(args);
                ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
                pb.environment().put(JobSecret.ENV, secret.toHex());
                Process p = pb.start();
                launchers.add(p);
                int host = h;
                Thread pump = new Thread(() -> {
                    try (java.io.BufferedReader r = p.inputReader(StandardCharsets.UTF_8)) {
                        String line;
                        while ((line = r.readLine()) != null) {
                            synchronized (out) {
                                out.println("[host " + host + "] " + line);
                            }
                        }
                    } catch (IOException ignored) {
                        // the launcher is gone
                    }
                }, "jccl-bed-out-" + h);
                pump.start();
                pumps.add(pump);
            }
            int status = 0;
            List<Process> running = new ArrayList<>(launchers);
            while (!running.isEmpty()) {
                for (int i = 0; i < running.size(); i++) {
                    Process p = running.get(i);
                    if (!p.isAlive()) {
                        running.remove(i--);
                        if (p.exitValue() != 0 && status == 0) {
                            status = p.exitValue();
                            running.forEach(Process::destroy);
                        }
                    }
                }
                Thread.sleep(20);
            }
            for (Thread t : pumps) {
                t.join(5_000);
            }
            return status;
        } finally {
            for (Process p : launchers) {
                if (p.isAlive()) {
                    p.destroyForcibly();
                }
            }
        }
    }

    /**
     * Names the process that owns the bed to {@code testbed.sh}: while it lives, another owner's bed does not replace
     * this one (it fails saying so), and another owner's {@code down} leaves it up.
     */
    public static final String OWNER_ENV = "JCCL_TESTBED_OWNER";

    private void run(List<String> cmd) throws IOException, InterruptedException {
        Path out = Files.createTempFile("jccl-testbed-", ".log");
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
            pb.environment().put(OWNER_ENV, Long.toString(ProcessHandle.current().pid())); // testbed.sh's header
            Process p = pb.start();
            boolean done;
            try {
                done = p.waitFor(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                destroyTree(p);
                throw e;
            }
            if (!done) {
                destroyTree(p); // a hung ip, tc or unshare too, not the shell alone
            }
            if (!done || p.exitValue() != 0) {
                throw new IllegalStateException("the multi-host test bed script failed (" + String.join(" ", cmd)
                        + (done ? "" : ", stopped after 60 s") + "): " + Files.readString(out).trim());
            }
        } finally {
            Files.deleteIfExists(out);
        }
    }

    /** Destroys {@code p} and every process it started. */
    private static void destroyTree(Process p) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
    }

    /** The shutdown hook that takes the bed down if the JVM exits first; removed by {@link #close}. */
    private Thread hook;

    private void down() throws IOException, InterruptedException {
        run(List.of("bash", script.toString(), "down"));
    }

    /** Takes every host of the bed down, with every process left on it. */
    @Override
    public void close() throws IOException {
        Thread h = hook;
        hook = null;
        try {
            takeDown(h, this::down);
        } finally {
            Files.deleteIfExists(script);
        }
    }

    /**
     * A bed's close: removes its {@link #bringUp} hook (null: none) and runs {@code down}, unless the JVM is exiting,
     * when the hook takes it down.
     */
    public static void takeDown(Thread hook, Step down) throws IOException {
        if (hook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException exiting) {
                return; // the hook takes it down
            }
        }
        try {
            down.run();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while taking the test bed down", e);
        }
    }
}
