package io.jccl.it;

import io.jccl.security.JobSecret;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** N JVMs of a test main class with the rendezvous environment set by hand, and their output. */
final class ProcessJob implements AutoCloseable {
    /** A per-rank variable (not passed on): "1" starts the rank under a parent that never reaps it. */
    static final String ZOMBIE_PARENT = "TEST_ZOMBIE_PARENT";
    /** A per-rank variable (not passed on): the test-bed host the rank runs on. */
    static final String BED_HOST = "TEST_BED_HOST";
    final List<Process> processes = new ArrayList<>();
    final List<List<String>> output = new ArrayList<>();

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static String java() {
        return ProcessHandle.current().info().command().orElse("java");
    }

    /** Starts {@code world} ranks; {@code perRankEnv} may override variables of a rank (null: none). */
    static ProcessJob start(int world, Class<?> main, List<String> args, Map<Integer, Map<String, String>> perRankEnv)
            throws IOException {
        ProcessJob job = new ProcessJob();
        int port = freePort();
        String secret = JobSecret.generate().toHex();
        for (int r = 0; r < world; r++) {
            List<String> cmd = new ArrayList<>(List.of(java(), "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                    main.getName()));
            cmd.addAll(args);
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
            Map<String, String> env = pb.environment();
            env.put("JCCL_RANK", Integer.toString(r));
            env.put("JCCL_WORLD_SIZE", Integer.toString(world));
            env.put("JCCL_MASTER_ADDR", "127.0.0.1");
            env.put("JCCL_MASTER_PORT", Integer.toString(port));
            env.put("JCCL_SECRET", secret);
            env.put("JCCL_CONNECT_TIMEOUT_MS", "20000");
            if (perRankEnv != null && perRankEnv.containsKey(r)) {
                env.putAll(perRankEnv.get(r));
            }
            String bedHost = env.remove(BED_HOST);
            if (bedHost != null) {
                // the rank runs on a simulated host of the multi-host test bed (scripts/testbed.sh)
                List<String> wrapped = new ArrayList<>(List.of("bash", TestBed.SCRIPT.toString(), "exec", bedHost));
                wrapped.addAll(pb.command());
                pb.command(wrapped);
            }
            if ("1".equals(env.remove(ZOMBIE_PARENT))) {
                // the rank runs under a parent that never reaps it: killed, it stays a zombie
                List<String> wrapped = new ArrayList<>(List.of("sh", "-c", "\"$0\" \"$@\" & exec sleep 600"));
                wrapped.addAll(cmd);
                pb.command(wrapped);
            }
            Process p = pb.start();
            List<String> lines = Collections.synchronizedList(new ArrayList<>());
            Thread t = new Thread(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    String l;
                    while ((l = in.readLine()) != null) {
                        lines.add(l);
                    }
                } catch (IOException ignored) {
                    // process gone
                }
            });
            t.setDaemon(true);
            t.start();
            job.processes.add(p);
            job.output.add(lines);
        }
        return job;
    }

    /**
     * Waits for rank {@code r} to exit; returns its status, or -1 on timeout, after asking the rank's JVM for a
     * thread dump (SIGQUIT), which lands in its output and so in {@link #dump()}: where it hung.
     */
    int await(int r, long seconds) throws InterruptedException {
        Process p = processes.get(r);
        if (p.waitFor(seconds, TimeUnit.SECONDS)) {
            return p.exitValue();
        }
        threadDump(p);
        return -1;
    }

    /** SIGQUIT to the JVMs of {@code p} (itself, or under the test bed's wrapper its descendants), then 2 s. */
    private static void threadDump(Process p) throws InterruptedException {
        List<ProcessHandle> all = new ArrayList<>();
        all.add(p.toHandle());
        p.toHandle().descendants().forEach(all::add);
        for (ProcessHandle h : all) {
            if (h.info().command().map(c -> c.endsWith("java")).orElse(false)) {
                try {
                    new ProcessBuilder("kill", "-QUIT", Long.toString(h.pid())).start().waitFor();
                } catch (IOException e) {
                    // no kill(1): no dump
                }
            }
        }
        Thread.sleep(2000);
    }

    /** The line of rank r starting with {@code prefix}, waiting up to {@code seconds}. */
    String line(int r, String prefix, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            synchronized (output.get(r)) {
                for (String l : output.get(r)) {
                    if (l.startsWith(prefix)) {
                        return l;
                    }
                }
            }
            Thread.sleep(20);
        }
        return null;
    }

    /**
     * The pid of rank {@code r}'s JVM, from its {@code READY rank r pid N} line (see {@link FaultWorker}), waiting up
     * to {@code seconds}. Under a wrapper (the zombie's parent, the test bed's script) {@link Process#pid()} is the
     * wrapper's pid, not the rank's.
     */
    long rankPid(int r, long seconds) throws InterruptedException {
        String l = line(r, "READY rank ", seconds);
        if (l == null) {
            throw new AssertionError("rank " + r + " never printed its READY line\n" + dump());
        }
        String[] f = l.split(" "); // READY rank <r> pid <pid>
        if (f.length != 5 || !f[2].equals(Integer.toString(r)) || !f[3].equals("pid")) {
            throw new AssertionError("rank " + r + ": not a READY line of this rank: " + l + "\n" + dump());
        }
        return Long.parseLong(f[4]);
    }

    /**
     * Shared-memory segments in /dev/shm still owned by one of this job's ranks: by the pid each rank's JVM
     * printed (every rank must have printed it), or by a process this job started.
     */
    List<String> leftoverSegments() throws IOException, InterruptedException {
        java.util.Set<Long> pids = new java.util.HashSet<>();
        for (int r = 0; r < processes.size(); r++) {
            pids.add(rankPid(r, 1));
            pids.add(processes.get(r).pid());
        }
        return segmentsOwnedBy(pids);
    }

    /** Shared-memory segments in /dev/shm whose owner is one of {@code pids}. */
    static List<String> segmentsOwnedBy(java.util.Set<Long> pids) throws IOException {
        List<String> left = new ArrayList<>();
        java.nio.file.Path dir = java.nio.file.Path.of("/dev/shm");
        if (!java.nio.file.Files.isDirectory(dir)) {
            return left;
        }
        try (java.nio.file.DirectoryStream<java.nio.file.Path> files =
                     java.nio.file.Files.newDirectoryStream(dir, "jccl-*.shm")) {
            for (java.nio.file.Path f : files) {
                try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(f.toFile(), "r")) {
                    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder());
                    raf.getChannel().read(b, io.jccl.transport.shm.ShmSegmentDescriptor.OWNER_PID_OFFSET);
                    if (pids.contains(b.getLong(0))) {
                        left.add(f.toString());
                    }
                } catch (IOException gone) {
                    // removed meanwhile
                }
            }
        }
        return left;
    }

    String dump() {
        StringBuilder sb = new StringBuilder();
        for (int r = 0; r < output.size(); r++) {
            synchronized (output.get(r)) {
                for (String l : output.get(r)) {
                    sb.append("[rank ").append(r).append("] ").append(l).append('\n');
                }
            }
        }
        return sb.toString();
    }

    /**
     * Kills every process of the job: each started process and its descendants (the rank's JVM under a wrapper:
     * killing the wrapper alone would leave it running), then waits up to 10 s for them to be gone.
     */
    @Override
    public void close() {
        List<ProcessHandle> all = new ArrayList<>();
        for (Process p : processes) {
            // the descendants first, while they are still this process's: once it is gone they are re-parented
            p.toHandle().descendants().forEach(all::add);
            all.add(p.toHandle());
        }
        for (ProcessHandle h : all) {
            h.destroyForcibly();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (ProcessHandle h : all) {
            try {
                h.onExit().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                // a killed child of a wrapper is a zombie until its new parent reaps it: nothing more to do here
            }
        }
    }
}
