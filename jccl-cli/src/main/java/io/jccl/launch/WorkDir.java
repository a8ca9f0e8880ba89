package io.jccl.launch;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A temporary directory for one batch of worker processes (verify, train and bench run their ranks as JVMs of
 * this tool), removed with everything in it on close.
 */
public final class WorkDir implements AutoCloseable {
    private final Path dir;

    private WorkDir(Path dir) {
        this.dir = dir;
    }

    public static WorkDir create(String prefix) throws IOException {
        return new WorkDir(Files.createTempDirectory(prefix));
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
     */
    public int runWorkers(int ranks, String transport, String maxHeap, List<String> args)
            throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx" + maxHeap, "-cp", classPath(), "io.jccl.cli.Main"));
        cmd.addAll(args);
        try (PrintStream out = new PrintStream(Files.newOutputStream(log()), true, StandardCharsets.UTF_8)) {
            return new Launcher(ranks, 1, 0, "127.0.0.1", 0, transport, io.jccl.security.JobSecret.generate(), cmd,
                    Map.of(), out).run();
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

    @Override
    public void close() throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
