package io.jccl.launch;

import io.jccl.security.JobSecret;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Starts the local ranks of a job as child processes (torchrun's role): each gets {@code JCCL_RANK},
 * {@code JCCL_WORLD_SIZE}, {@code JCCL_LOCAL_RANK}, {@code JCCL_LOCAL_WORLD_SIZE}, {@code JCCL_MASTER_ADDR},
 * {@code JCCL_MASTER_PORT} and the job secret {@code JCCL_SECRET}; every output line is prefixed with its rank.
 * When a rank exits with a non-zero status the others are stopped and the job takes that status; when the
 * launcher itself is interrupted or terminated, every rank is stopped (no orphaned processes).
 */
public final class Launcher {
    /** How long stopped ranks get to exit before they are killed. */
    public static final long GRACE_MS = 3_000;

    private final int nprocPerNode;
    private final int nnodes;
    private final int nodeRank;
    private final String masterAddr;
    private final int masterPort;
    private final String transport;
    private final JobSecret secret;
    private final List<String> command;
    private final Map<String, String> extraEnv;
    private final PrintStream out;
    private final java.nio.file.Path shmDirectory;
    private final List<Process> children = new ArrayList<>();
    private CpuBinding cpuBinding = CpuBinding.CORE;
    /** Who reports a failed rank: the command the user ran. */
    private String name = "jccl launch";

    /**
     * Whether each rank is bound to a core of its own ({@code taskset -c}), as Open MPI's {@code mpirun} binds its
     * ranks by default. Binding happens only while this node's ranks do not outnumber the CPUs this launcher may
     * use, and only where {@code taskset} is on the PATH; else ranks run unbound.
     *
     * <p>Why: two shared-memory ranks that the scheduler puts on one core stay there. Each waits for the other by
     * spinning and then yielding, both count as cache-hot (they ran within the last half millisecond), and the
     * idle core never pulls either: measured on 2 cores, a quarter of the rows of {@code jccl bench --transport shm
     * --ranks 2 --sizes 4,1K} took 30-50 us instead of 1-3 us, every yield lasting about 40 us; with the ranks bound
     * apart, 2 rows in 32 (see docs/performance.md).
     */
    public enum CpuBinding {
        /** Rank {@code local} on the {@code local}-th CPU this launcher may use. */
        CORE,
        /** No binding: the scheduler places the ranks. */
        NONE
    }

    /** As below, with the segment directory of this process's settings ({@code JCCL_SHM_DIR}). */
    public Launcher(int nprocPerNode, int nnodes, int nodeRank, String masterAddr, int masterPort, String transport,
                    JobSecret secret, List<String> command, Map<String, String> extraEnv, PrintStream out) {
        this(nprocPerNode, nnodes, nodeRank, masterAddr, masterPort, transport, secret, command, extraEnv, out,
                io.jccl.JcclSettings.fromEnvironment().shmDirectory());
    }

    /** {@code shmDirectory}: where the ranks' shared-memory segments are, to remove those of killed ranks. */
    public Launcher(int nprocPerNode, int nnodes, int nodeRank, String masterAddr, int masterPort, String transport,
                    JobSecret secret, List<String> command, Map<String, String> extraEnv, PrintStream out,
                    java.nio.file.Path shmDirectory) {
        if (nprocPerNode < 1 || nnodes < 1 || nodeRank < 0 || nodeRank >= nnodes) {
            throw new IllegalArgumentException("need -n >= 1, --nnodes >= 1 and 0 <= --node-rank < --nnodes, got n="
                    + nprocPerNode + ", nnodes=" + nnodes + ", node-rank=" + nodeRank);
        }
        if (command.isEmpty()) {
            throw new IllegalArgumentException("no command to launch: jccl launch -n N -- CMD [ARGS...]");
        }
        if (masterPort == 0 && nnodes > 1) {
            throw new IllegalArgumentException("--master-port is required with more than one node");
        }
        this.nprocPerNode = nprocPerNode;
        this.nnodes = nnodes;
        this.nodeRank = nodeRank;
        this.masterAddr = masterAddr;
        this.masterPort = masterPort == 0 ? freePort(masterAddr) : masterPort;
        this.transport = transport;
        this.secret = Objects.requireNonNull(secret, "secret");
        this.command = List.copyOf(command);
        this.extraEnv = Map.copyOf(extraEnv);
        this.out = out;
        this.shmDirectory = Objects.requireNonNull(shmDirectory, "shmDirectory");
    }

    /**
     * Whether a program can be started, found as a shell finds it: a name with a slash is a path, any other is
     * looked up in the directories of PATH. Not found and not executable carry the statuses a shell gives them.
     */
    public enum Program {
        FOUND(0, "found"),
        NOT_FOUND(127, "no such file or directory (not found)"),
        NOT_EXECUTABLE(126, "permission denied (not an executable file)");

        /** The exit status a shell gives. */
        public final int status;
        /** What is wrong, for {@code jccl launch: PROGRAM: message}. */
        public final String message;

        Program(int status, String message) {
            this.status = status;
            this.message = message;
        }

        /** How {@code program} resolves; {@code path} is the PATH to search (null: none). */
        public static Program find(String program, String path) {
            if (program.isEmpty()) {
                return NOT_FOUND;
            }
            if (program.contains("/")) {
                return check(java.nio.file.Path.of(program));
            }
            Program best = NOT_FOUND;
            for (String dir : (path == null ? "" : path).split(":", -1)) {
                Program p = check(java.nio.file.Path.of(dir.isEmpty() ? "." : dir, program));
                if (p == FOUND) {
                    return FOUND;
                }
                if (p == NOT_EXECUTABLE) {
                    best = NOT_EXECUTABLE;
                }
            }
            return best;
        }

        private static Program check(java.nio.file.Path p) {
            if (!java.nio.file.Files.isRegularFile(p)) {
                return NOT_FOUND;
            }
            return java.nio.file.Files.isExecutable(p) ? FOUND : NOT_EXECUTABLE;
        }
    }

    static int freePort(String host) {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress(host, 0));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("cannot find a free port on " + host + ": " + e.getMessage(), e);
        }
    }

    public int masterPort() {
        return masterPort;
    }

    /** Sets how the ranks are bound to CPUs (default {@link CpuBinding#CORE}); returns this launcher. */
    public Launcher cpuBinding(CpuBinding binding) {
        this.cpuBinding = Objects.requireNonNull(binding, "binding");
        return this;
    }

    /**
     * Sets the name its messages begin with (default {@code jccl launch}): the command the user ran, where a command
     * runs its workers through a launcher of its own ({@code jccl verify}, ...). Returns this launcher.
     */
    public Launcher name(String name) {
        this.name = Objects.requireNonNull(name, "name");
        return this;
    }

    /**
     * The CPU of each local rank, or null when they run unbound: {@link CpuBinding#NONE}, more ranks than CPUs,
     * no {@code taskset} (or one that may not set
     * affinities here), or CPUs that cannot be read ({@code Cpus_allowed_list} of {@code /proc/self/status}).
     */
    int[] rankCpus() {
        if (cpuBinding == CpuBinding.NONE
                || Program.find("taskset", System.getenv("PATH")) != Program.FOUND) {
            return null;
        }
        int[] allowed = allowedCpus(java.nio.file.Path.of("/proc/self/status"));
        if (allowed == null || allowed.length < nprocPerNode) {
            return null;
        }
        int[] cpus = java.util.Arrays.copyOf(allowed, nprocPerNode);
        return tasksetWorks(cpus[cpus.length - 1]) ? cpus : null;
    }

    /** Whether {@code taskset -c cpu true} succeeds here (a container may forbid setting affinities). */
    private static boolean tasksetWorks(int cpu) {
        try {
            Process p = new ProcessBuilder("taskset", "-c", Integer.toString(cpu), "true").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(5, java.util.concurrent.TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The CPUs in the {@code Cpus_allowed_list} line of {@code status} (e.g. {@code 0-3,6}), or null. */
    public static int[] allowedCpus(java.nio.file.Path status) {
        return io.jccl.transport.HostCpus.allowedList(status);
    }

    /** Runs the job; returns 0 when every rank exits 0, else the status of the first rank that failed. */
    public int run() throws IOException, InterruptedException {
        Thread hook = new Thread(() -> { // SIGTERM, Ctrl-C: run()'s own clean-up below does not run then
            synchronized (children) { // no rank starts once this is set: stopAll below sees every one started
                stopping = true;
                long until = System.nanoTime() + GRACE_MS * 1_000_000;
                try {
                    while (starting > 0 && until - System.nanoTime() > 0) { // a start in progress lists its rank
                        children.wait(Math.max(1, (until - System.nanoTime()) / 1_000_000));
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            stopAll("the launcher is exiting");
            removeSegmentsOfChildren(); // of a rank killed after the grace period, which could not remove its own
        }, "jccl-launch-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        List<Thread> pumps = new ArrayList<>();
        int world = nprocPerNode * nnodes;
        int[] cpus = rankCpus();
        try {
            for (int local = 0; local < nprocPerNode; local++) {
                int rank = nodeRank * nprocPerNode + local;
                List<String> cmd = command;
                if (cpus != null) { // taskset execs the command: the child is the rank itself
                    cmd = new ArrayList<>(List.of("taskset", "-c", Integer.toString(cpus[local])));
                    cmd.addAll(command);
                }
                ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
                Map<String, String> env = pb.environment();
                env.putAll(extraEnv);
                env.put("JCCL_RANK", Integer.toString(rank));
                env.put("JCCL_WORLD_SIZE", Integer.toString(world));
                env.put("JCCL_LOCAL_RANK", Integer.toString(local));
                env.put("JCCL_LOCAL_WORLD_SIZE", Integer.toString(nprocPerNode));
                env.put("JCCL_MASTER_ADDR", masterAddr);
                env.put("JCCL_MASTER_PORT", Integer.toString(masterPort));
                env.put("JCCL_TRANSPORT", transport);
                env.put(JobSecret.ENV, secret.toHex());
                // a rank is listed under the lock that the shutdown hook sets stopping under, and the hook waits (a
                // bounded time) for a start in progress: a signal while the ranks were starting stopped those started
                // before it, and the loop went on starting the others, which outlived the launcher (and whose
                // segments it then removed under them). The start itself is not under the lock: an exec that stalls
                // must not hold off the hook beyond its wait.
                synchronized (children) {
                    if (stopping) {
                        break;
                    }
                    starting++;
                }
                Process started = null;
                try {
                    started = pb.start();
                } catch (IOException e) {
                    throw new IOException("cannot start rank " + rank + " (" + command.get(0) + "): "
                            + e.getMessage(), e);
                } finally {
                    synchronized (children) {
                        if (started != null) {
                            children.add(started); // the hook lists it: it waited for this start to end
                        }
                        starting--;
                        children.notifyAll();
                    }
                }
                if (stopping) {
                    break;
                }
                Process p = started;
                Thread pump = new Thread(() -> pump(rank, p), "jccl-launch-out-" + rank);
                pump.setDaemon(true); // a pipe held by a rank's leftover process must not keep the launcher alive
                pump.start();
                pumps.add(pump);
            }
            int status = 0;
            int failedRank = -1;
            List<Process> running;
            synchronized (children) {
                running = new ArrayList<>(children);
            }
            while (!running.isEmpty()) {
                for (int i = 0; i < running.size(); i++) {
                    Process p = running.get(i);
                    if (!p.isAlive()) {
                        running.remove(i--);
                        if (p.exitValue() != 0 && status == 0) {
                            status = p.exitValue();
                            if (stopping) { // the launcher itself was stopped: no rank to blame
                                continue;
                            }
                            failedRank = nodeRank * nprocPerNode + children.indexOf(p);
                            stopAll("rank " + failedRank + " exited with status " + status);
                        }
                    }
                }
                Thread.sleep(20);
            }
            // at most 5 s for the rest of their output: a rank that exited but left a process of its own holding the
            // pipe (sh -c 'sleep 600 & exit 0') kept the launcher waiting for as long as that process lived
            long until = System.nanoTime() + 5_000_000_000L;
            for (Thread t : pumps) {
                t.join(Math.max(1, (until - System.nanoTime()) / 1_000_000));
            }
            if (failedRank >= 0) {
                System.err.println(name + ": rank " + failedRank + " failed with exit status " + status
                        + "; the other ranks were stopped");
            }
            return status;
        } finally {
            stopAll("the launcher is exiting");
            removeSegmentsOfChildren();
            // and those of processes it never knew of that are gone: a grandchild (a wrapper rank's java) killed
            // with SIGKILL while the job ran on
            try {
                io.jccl.transport.shm.ShmTransport.removeStaleSegments(shmDirectory);
            } catch (RuntimeException e) { // the ranks' status stays the result
                System.err.println(name + ": cannot look for segments left in " + shmDirectory + ": " + e);
            }
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // already shutting down
            }
        }
    }

    /**
     * Removes the shared-memory segments that this node's ranks left behind: a rank killed with SIGKILL cannot
     * remove its own, and a rank stopped while another rank waits on it may not have.
     */
    /** Set by the shutdown hook: the launcher was stopped (SIGTERM, Ctrl-C), and its ranks with it. */
    private volatile boolean stopping;
    /** Ranks being started (their exec in progress); guarded by {@code children}. */
    private int starting;

    private void removeSegmentsOfChildren() {
        java.util.Set<Long> pids = new java.util.HashSet<>();
        synchronized (children) {
            for (Process p : children) {
                pids.add(p.pid());
            }
            pids.addAll(descendantPids);
        }
        java.nio.file.Path dir = shmDirectory;
        try (java.nio.file.DirectoryStream<java.nio.file.Path> files =
                     java.nio.file.Files.newDirectoryStream(dir, "jccl-*.shm")) {
            for (java.nio.file.Path f : files) {
                long owner = -1;
                try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f)) {
                    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder());
                    if (ch.read(b, io.jccl.transport.shm.ShmSegmentDescriptor.OWNER_PID_OFFSET) == 8) {
                        owner = b.getLong(0);
                    }
                } catch (IOException gone) {
                    continue;
                }
                if (pids.contains(owner)) {
                    java.nio.file.Files.deleteIfExists(f);
                }
            }
        } catch (IOException e) {
            System.err.println(name + ": cannot remove the ranks' segments in " + dir + ": " + e.getMessage());
        }
    }

    private void pump(int rank, Process p) {
        String prefix = "[rank " + rank + "] ";
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                synchronized (out) {
                    out.println(prefix + line);
                }
            }
        } catch (IOException ignored) {
            // the child is gone
        }
    }

    /** Terminates every live child (and its descendants), then kills what is left after the grace period. */
    private void stopAll(String why) {
        List<Process> live = new ArrayList<>();
        synchronized (children) {
            for (Process p : children) {
                if (p.isAlive()) {
                    live.add(p);
                }
            }
        }
        if (live.isEmpty()) {
            return;
        }
        // the descendants as they are now: a rank that is a wrapper (a shell running java without exec) exits at the
        // SIGTERM, and its own children are then nobody's descendants, left to outlive the launcher
        List<ProcessHandle> below = new ArrayList<>();
        for (Process p : live) {
            p.descendants().forEach(below::add);
        }
        synchronized (children) {
            below.forEach(h -> descendantPids.add(h.pid()));
        }
        below.forEach(ProcessHandle::destroy);
        for (Process p : live) {
            p.destroy();
        }
        long deadline = System.nanoTime() + GRACE_MS * 1_000_000;
        for (Process p : live) {
            try {
                long left = Math.max(0, (deadline - System.nanoTime()) / 1_000_000);
                if (!p.waitFor(left, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                    p.descendants().forEach(ProcessHandle::destroyForcibly);
                    p.destroyForcibly();
                    p.waitFor(KILL_WAIT_MS, java.util.concurrent.TimeUnit.MILLISECONDS); // one in the kernel's
                    // uninterruptible sleep must not hold the launcher's exit
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        long left = Math.max(0, (deadline - System.nanoTime()) / 1_000_000);
        for (ProcessHandle h : below) {
            try {
                h.onExit().get(left, java.util.concurrent.TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
                h.destroyForcibly(); // past the grace: as a rank is
            } catch (InterruptedException e) {
                h.destroyForcibly();
                Thread.currentThread().interrupt();
            }
            left = Math.max(0, (deadline - System.nanoTime()) / 1_000_000);
        }
    }

    /** How long the launcher waits for a child it killed (SIGKILL) to be gone. */
    private static final long KILL_WAIT_MS = 5_000;
    /** The pids of the ranks' descendants when they were stopped (guarded by {@code children}): their segments go too. */
    private final java.util.Set<Long> descendantPids = new java.util.HashSet<>();
}
