package io.jccl.launch;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * A temporary directory for one batch of worker processes (verify, train and bench run their ranks as JVMs of
 * this tool; gloo's and Open MPI's runs, and the probe for torch, are here too), removed with everything in it on
 * close, or when this JVM exits first (SIGTERM, Ctrl-C: the try-with-resources that closes it does not unwind
 * then), after the processes {@link #start started} for it are killed.
 */
public final class WorkDir implements AutoCloseable {
    /** The directories not closed yet, which the shutdown hook removes (guarded by itself, as are the two below). */
    private static final Set<WorkDir> OPEN = new LinkedHashSet<>();
    /** Whether the shutdown hook is registered: once, with the first directory. */
    private static boolean hooked;
    /** Set by the shutdown hook: no directory is made, and no process started, from then on. */
    private static boolean exiting;
    /** Processes being started (their exec in progress), which the shutdown hook waits for a bounded time. */
    private static int starting;
    /**
     * Directories being made: from before the directory is made until it is listed in {@link #OPEN}, or removed
     * again when the hook has begun meanwhile; the shutdown hook waits for them as for {@link #starting}.
     */
    private static int creating;
    /** Run, when set, after a directory is made and before it is listed: the tests hold a create there. */
    static volatile Runnable afterMaking;
    /**
     * How long the shutdown hook keeps removing a directory that is not empty yet: ranks stopped meanwhile by their
     * launcher's own hook (within {@link Launcher#GRACE_MS}) or this JVM's other threads may still write into it.
     */
    static final long REMOVE_MS = Launcher.GRACE_MS + 2_000;

    private final Path dir;
    /** The processes started for this directory (guarded by this). */
    private final List<Process> processes = new ArrayList<>();

    private WorkDir(Path dir) {
        this.dir = dir;
    }

    /**
     * Makes a directory named {@code prefix}... in the temporary directory. The hook is registered, and the create
     * counted, before the directory is made; the hook waits (a bounded time) for a create in progress, which lists
     * its directory or, when the hook has begun meanwhile, removes it before it is no longer counted. The directory
     * was made first and the hook registered (the first time) or checked for after: a signal in between left it, as
     * its removal ran on this thread, which the JVM does not wait for (and with no hook yet, nothing waited at all),
     * or the hook had listed the open directories before this one.
     */
    public static WorkDir create(String prefix) throws IOException {
        synchronized (OPEN) {
            if (!exiting) {
                try {
                    if (!hooked) {
                        Runtime.getRuntime().addShutdownHook(new Thread(WorkDir::removeAll, "jccl-workdir-removal"));
                        hooked = true;
                    }
                } catch (IllegalStateException shuttingDown) {
                    exiting = true; // the JVM exits, with no hook of ours: nothing is made from now on
                }
            }
            if (exiting) {
                throw new IOException("not making a work directory: this JVM is exiting");
            }
            creating++;
        }
        try {
            WorkDir w = new WorkDir(Files.createTempDirectory(prefix)); // not under the lock, as a process start
            Runnable held = afterMaking;
            if (held != null) {
                held.run();
            }
            synchronized (OPEN) {
                if (!exiting) {
                    OPEN.add(w);
                    return w;
                }
            }
            w.remove(); // still counted: the hook waits for it
            throw new IOException("not making a work directory: this JVM is exiting");
        } finally {
            synchronized (OPEN) {
                creating--;
                OPEN.notifyAll();
            }
        }
    }

    /**
     * Starts {@code pb} as a process of this directory's work: when this JVM exits before the directory is closed,
     * it is killed with every process it started before the directory is removed; {@link #close} kills it too if it
     * still runs then.
     */
    public Process start(ProcessBuilder pb) throws IOException {
        synchronized (OPEN) {
            if (exiting) {
                throw new IOException("not starting a process: this JVM is exiting");
            }
            starting++;
        }
        try {
            Process p = pb.start(); // not under a lock: an exec that stalls must not hold off the hook beyond its wait
            synchronized (this) {
                processes.add(p); // before the hook lists them: it waits for a start in progress
            }
            return p;
        } finally {
            synchronized (OPEN) {
                starting--;
                OPEN.notifyAll();
            }
        }
    }

    /** The shutdown hook: kills the processes of every open directory, then removes the directories. */
    private static void removeAll() {
        List<WorkDir> open;
        synchronized (OPEN) {
            exiting = true;
            long until = System.nanoTime() + Launcher.GRACE_MS * 1_000_000;
            try {
                // a start in progress lists its process, a create its directory (or removes it)
                while (starting + creating > 0 && until - System.nanoTime() > 0) {
                    OPEN.wait(Math.max(1, (until - System.nanoTime()) / 1_000_000));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            open = new ArrayList<>(OPEN);
        }
        for (WorkDir w : open) {
            w.killProcesses();
        }
        long until = System.nanoTime() + REMOVE_MS * 1_000_000;
        for (WorkDir w : open) {
            while (true) {
                try {
                    w.remove();
                    if (!Files.exists(w.dir)) {
                        break;
                    }
                } catch (IOException | RuntimeException retry) {
                    // a file that appeared or went meanwhile: again
                }
                if (System.nanoTime() - until > 0) {
                    break;
                }
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    private void killProcesses() {
        List<Process> mine;
        synchronized (this) {
            mine = new ArrayList<>(processes);
        }
        for (Process p : mine) {
            if (p.isAlive()) {
                ProcessTree.kill(p.toHandle());
            }
        }
    }

    /** Deletes the directory and everything in it; nothing when it is gone already. */
    private synchronized void remove() throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    public Path path() {
        return dir;
    }

    public Path resolve(String name) {
        return dir.resolve(name);
    }

    /**
     * Runs {@code ranks} JVMs of {@code io.jccl.cli.Main <args>} on this machine's classpath through
     * {@link Launcher} over {@code transport}, their output going to {@code log.txt} here; returns the job's status.
     * {@code command} (e.g. {@code jccl verify}) reports a rank that failed, on stderr.
     */
    public int runWorkers(String command, int ranks, String transport, String maxHeap, List<String> args)
            throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx" + maxHeap, "-cp", classPath(), "io.jccl.cli.Main"));
        cmd.addAll(args);
        try (PrintStream out = new PrintStream(Files.newOutputStream(log()), true, StandardCharsets.UTF_8)) {
            return new Launcher(ranks, 1, 0, "127.0.0.1", 0, transport, io.jccl.security.JobSecret.generate(), cmd,
                    Map.of(), out).name(command).run();
        }
    }

    /**
     * This JVM's class path with every entry made absolute, for the JVMs it starts: a bed host runs them in
     * another working directory, where {@code java -jar jccl-cli/target/jccl.jar}'s relative entry names nothing.
     */
    static String classPath() {
        StringBuilder cp = new StringBuilder();
        for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            if (cp.length() > 0) {
                cp.append(java.io.File.pathSeparatorChar);
            }
            cp.append(entry.isEmpty() ? entry : java.nio.file.Paths.get(entry).toAbsolutePath().toString());
        }
        return cp.toString();
    }

    public Path log() {
        return dir.resolve("log.txt");
    }

    /** The last lines of the workers' log, for error messages. */
    public String logTail(int lines) throws IOException {
        if (!Files.exists(log())) {
            return "(no output)";
        }
        List<String> all = Files.readAllLines(log());
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }

    /** Kills the processes {@link #start started} for it that still run, and removes the directory. */
    @Override
    public void close() throws IOException {
        synchronized (OPEN) {
            OPEN.remove(this);
        }
        killProcesses();
        remove(); // under this directory's lock: the shutdown hook may be removing it too
    }
}
