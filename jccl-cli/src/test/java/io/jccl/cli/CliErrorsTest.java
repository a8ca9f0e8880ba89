package io.jccl.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 14, item 8: a wrong option is picocli's one line and the usage with exit status 2, checked before any
 * worker starts; a failure at run time is one line per cause with status 1; never a Java stack trace unless asked.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class CliErrorsTest {

    /** Status 2, the message first, then the command's usage; nothing on stdout (nothing ran). */
    private static void assertUsageError(Cli r, String command, String message) {
        assertEquals(2, r.status, r.both());
        String first = r.err.lines().findFirst().orElse("");
        assertTrue(first.startsWith("Invalid value") || first.contains(message), r.both());
        assertTrue(r.err.contains(message), r.both());
        assertTrue(r.err.contains("Usage: jccl " + command), r.both());
        assertEquals("", r.out, r.both());
        Cli.assertNoStackTrace(r.both());
    }

    @Test
    void benchWithABogusTransportIsAUsageErrorBeforeAnyWorkerStarts() {
        assertUsageError(Cli.run("bench", "--transport", "bogus"), "bench",
                "Invalid value for option '--transport': 'bogus' is not a transport: threads, shm or tcp");
    }

    @Test
    void benchWithABadSizeIsAUsageError() {
        assertUsageError(Cli.run("bench", "--sizes", "4,3X"), "bench", "'3X' is not a size");
        // a value given twice ran twice and kept one row of the two (1K and 1024 are one size)
        assertUsageError(Cli.run("bench", "--sizes", "1K,4,1024"), "bench",
                "Invalid value for option '--sizes': 1024 bytes is given more than once");
        assertUsageError(Cli.run("bench", "--ops", "allreduce,broadcast,all_reduce", "--sizes", "4"), "bench",
                "Invalid value for option '--ops': all_reduce is given more than once");
        assertUsageError(Cli.run("bench", "--algorithms", "ring,auto,RING", "--sizes", "4"), "bench",
                "Invalid value for option '--algorithms': ring is given more than once");
        assertUsageError(Cli.run("bench", "--sizes", "-4"), "bench", "'-4' is not a size");
        assertUsageError(Cli.run("tune", "--large", "16Q"), "tune", "'16Q' is not a size");
        assertUsageError(Cli.run("tune", "--hosts", "2", "--choices"), "tune",
                "--choices measures the algorithms on one host: not with --hosts");
    }

    /**
     * A size whose buffer a Java array cannot hold is a usage error: the element count was cast to int, so 16G ran
     * (and printed, successfully) rows of 0 elements, 8G failed with NegativeArraySizeException, and tune --large 16G
     * divided by 0 bytes and stored Infinity as a beta in the tuning file.
     */
    @Test
    void aSizeBeyondAJavaArrayIsAUsageError(@TempDir Path dir) {
        assertUsageError(Cli.run("bench", "--sizes", "4,16G"), "bench", "'--sizes': 17179869184 bytes are "
                + "4294967296 float32 elements, more than a Java array holds (2147483639, 8589934556 bytes)");
        assertUsageError(Cli.run("bench", "--sizes", "8G", "--scale", "0.01"), "bench",
                "'--sizes': 8589934592 bytes are 2147483648 float32 elements");
        // allgather's buffer is rounded up to a multiple of the ranks, past the limit here
        assertUsageError(Cli.run("bench", "--sizes", "8589934556", "--ops", "allgather", "--ranks", "3"), "bench",
                "'--sizes': 8589934556 bytes are 2147483640 float32 elements");
        Path tune = dir.resolve("tune.properties");
        assertUsageError(Cli.run("tune", "--transport", "threads", "--ranks", "2", "--large", "16G", "--scale", "0.01",
                "--output", tune.toString()), "tune", "'--large': 17179869184 bytes are 4294967296 float32 elements");
        assertTrue(!Files.exists(tune));
    }

    /**
     * Rows whose arrays do not fit in memory are a usage error: a rank process's heap was 1 GiB whatever the sizes,
     * so a row above about 256 MiB died of OutOfMemoryError after the rows before it had been measured, and the
     * table was lost. A process now gets what its largest row needs; what this host cannot give is refused.
     */
    @Test
    void rowsThatDoNotFitInMemoryAreAUsageError() {
        assertUsageError(Cli.run("bench", "--transport", "shm", "--ranks", "16", "--sizes", "4,2G"), "bench",
                "'--sizes': 2147483648 bytes need about 6144 MiB for each of the 16 rank processes on this machine");
        assertUsageError(Cli.run("bench", "--transport", "threads", "--ranks", "8", "--sizes", "4,2G"), "bench",
                "'--sizes': 2147483648 bytes need about 49152 MiB of this JVM's heap for 8 ranks as threads");
        // the bed's hosts are all on this machine: 16 ranks of 8 hosts, not the 2 of one host
        assertUsageError(Cli.run("bench", "--hosts", "8", "--ranks-per-host", "2", "--sizes", "2G"), "bench",
                "'--sizes': 2147483648 bytes need about 6144 MiB for each of the 16 rank processes on this machine");
        assertEquals("1024m", io.jccl.bench.Bench.heap(1));
        assertEquals("3328m", io.jccl.bench.Bench.heap(256L << 20)); // 1 GiB rows: 3 GiB of arrays and 256 MiB
    }

    @Test
    void benchChecksEveryListBeforeMeasuring() {
        assertUsageError(Cli.run("bench", "--ops", "allreduce,frobnicate"), "bench", "unknown op 'frobnicate'");
        assertUsageError(Cli.run("bench", "--algorithms", "ring,bogus"), "bench", "'--algorithms': 'bogus'");
        assertUsageError(Cli.run("bench", "--compare", "gloo,nccl"), "bench", "'--compare': 'nccl'");
        assertUsageError(Cli.run("bench", "--ranks", "0"), "bench", "'--ranks': 0 (it must be at least 1)");
        assertUsageError(Cli.run("bench", "--link", "1gbit"), "bench", "give --hosts 2 or more");
    }

    /**
     * An algorithm the ranks cannot run is a usage error: bench measured every other algorithm first (minutes) and
     * then failed with status 1, losing the table; verify ran every case and reported each row as an error.
     */
    @Test
    void anAlgorithmTheRanksCannotRunIsAUsageError() {
        assertUsageError(Cli.run("bench", "--transport", "tcp", "--algorithms", "auto,shared_memory", "--sizes", "4"),
                "bench", "'--algorithms': 'shared_memory' cannot run all_reduce here: algorithm SHARED_MEMORY needs "
                        + "ranks that share memory (threads, or the shm transport)");
        assertUsageError(Cli.run("verify", "--algorithm", "hierarchical", "--reference", "java", "--primitive",
                "all_reduce", "--dtype", "float32", "--op", "sum", "--count", "5"), "verify",
                "'--algorithm': 'hierarchical' cannot run all_reduce here: algorithm HIERARCHICAL needs ranks on "
                        + "several hosts");
        assertUsageError(Cli.run("verify", "--algorithm", "hierarchical", "--reference", "java"), "verify",
                "it runs on the test bed: --hosts 2 or more with --ranks-per-host 2 or more");
        assertUsageError(Cli.run("verify", "--algorithm", "shm", "--transport", "tcp", "--reference", "java"), "verify",
                "it runs with --transport threads or shm, without --hosts");
        // the bed's hosts share no memory; a hierarchical broadcast needs a power-of-two number of hosts
        assertUsageError(Cli.run("bench", "--hosts", "2", "--algorithms", "shared_memory"), "bench",
                "SHARED_MEMORY needs ranks that share memory");
        assertUsageError(Cli.run("bench", "--hosts", "3", "--ops", "allreduce,broadcast", "--algorithms",
                "hierarchical"), "bench", "'hierarchical' cannot run broadcast here: algorithm HIERARCHICAL broadcast "
                + "needs a power-of-two number of hosts, not 3");
        assertUsageError(Cli.run("bench", "--hosts", "2", "--ranks-per-host", "1", "--algorithms", "hierarchical"),
                "bench", "--ranks-per-host 2 or more");
    }

    /** What the ranks can run still runs: an operation without the algorithm runs its default, as before. */
    @Test
    void anAlgorithmTheRanksCanRunIsTaken() {
        Cli r = Cli.run("verify", "--algorithm", "shared_memory", "--reference", "java", "--primitive",
                "all_reduce,all_to_all", "--dtype", "float32", "--op", "sum", "--count", "5", "--world", "2");
        assertEquals(0, r.status, r.both());
        assertTrue(r.out.contains("SHARED_MEMORY"), r.both());
    }

    /**
     * Under JCCL_DETERMINISTIC=1, which runs every floating-point allreduce, reduce_scatter and reduce as ORDERED
     * whatever algorithm is asked for, an algorithm the mode overrides is a usage error that names the variable:
     * bench --transport tcp --algorithms shared_memory refused it for want of shared memory, though ORDERED would run
     * (and before that check ran it and printed ORDERED's rows as SHARED_MEMORY); verify's default ring ran ORDERED
     * as RING and held it to gloo's bits, as did the ring a primitive without the algorithm asked for runs; tune
     * wrote ORDERED's figures as the ring's. auto and ordered, and integer types, still run.
     */
    @Test
    void anAlgorithmDeterministicModeOverridesIsAUsageError(@TempDir Path dir) throws Exception {
        Map<String, String> env = Map.of("JCCL_DETERMINISTIC", "1");
        String why = "JCCL_DETERMINISTIC=1 runs its floating-point calls as ORDERED (summed in rank order), not ";
        assertRealUsageError(realMain(env, "bench", "--transport", "tcp", "--algorithms", "auto,shared_memory",
                "--sizes", "4"), "bench", "'--algorithms': 'shared_memory' cannot run all_reduce here: " + why
                + "SHARED_MEMORY; ask for ordered or auto, or unset JCCL_DETERMINISTIC");
        assertRealUsageError(realMain(env, "verify", "--reference", "java"), "verify",
                "'--algorithm': 'ring' cannot run all_reduce here: " + why + "RING");
        assertRealUsageError(realMain(env, "verify", "--algorithm", "bruck", "--primitive", "reduce_scatter",
                "--reference", "java"), "verify", "'bruck' cannot run reduce_scatter here: " + why + "RING");
        Path tune = dir.resolve("tune.properties");
        assertRealUsageError(realMain(env, "tune", "--transport", "threads", "--ranks", "2", "--scale", "0.01",
                "--output", tune.toString()), "tune", "jccl tune measures the float32 ring allreduce, but " + why
                + "RING; unset JCCL_DETERMINISTIC");
        assertTrue(!Files.exists(tune));
        String[] ran = realMain(env, "verify", "--algorithm", "ring", "--reference", "java", "--primitive",
                "all_reduce", "--dtype", "int32", "--op", "sum", "--count", "5", "--world", "2");
        assertEquals("0", ran[0], ran[1]);
        assertTrue(ran[1].contains("RING"), ran[1]);
        ran = realMain(env, "bench", "--transport", "threads", "--ranks", "2", "--algorithms", "auto,ordered",
                "--sizes", "4", "--scale", "0.01");
        assertEquals("0", ran[0], ran[1]);
        assertTrue(ran[1].contains("AUTO:ORDERED") && ran[1].contains(" ORDERED "), ran[1]);
    }

    /** As {@link #assertUsageError}, of the real main's status and output. */
    private static void assertRealUsageError(String[] r, String command, String message) {
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].contains(message), r[1]);
        assertTrue(r[1].contains("Usage: jccl " + command), r[1]);
        Cli.assertNoStackTrace(r[1]);
    }

    /**
     * More hosts than the test bed has is a usage error, before the bed is built: 17 failed at run time, in the bed's
     * script as root (which then took down any bed this machine had up) or on the need for root.
     */
    @Test
    void moreHostsThanTheBedHasIsAUsageError() {
        for (String command : new String[] {"bench", "verify", "tune"}) {
            assertUsageError(Cli.run(command, "--hosts", "17"), command,
                    "Invalid value for option '--hosts': 17 (the test bed has at most 16 hosts)");
            assertUsageError(Cli.run(command, "--hosts", "0"), command, "'--hosts': 0 (it must be at least 1)");
        }
    }

    @Test
    void launchWithNoRanksIsAUsageError() {
        assertUsageError(Cli.run("launch", "-n", "0", "--", "true"), "launch",
                "Invalid value for option '-n': 0 (it must be at least 1)");
        assertUsageError(Cli.run("launch", "-n", "1", "--node-rank", "1", "--", "true"), "launch", "'--node-rank'");
        assertUsageError(Cli.run("launch", "-n", "1", "--transport", "threads", "--", "true"), "launch",
                "'threads' is not a transport of processes: auto, shm or tcp");
    }

    @Test
    void launchOfAMissingProgramIsOneLineWithTheShellsStatus() {
        Cli r = Cli.run("launch", "-n", "2", "--", "/nonexistent/prog", "arg");
        assertEquals(127, r.status, r.both());
        assertEquals("jccl launch: /nonexistent/prog: no such file or directory (not found)", r.err.strip(), r.both());
        assertEquals("", r.out, r.both());
        Cli r2 = Cli.run("launch", "-n", "2", "--", "no-such-program-of-jccl-tests");
        assertEquals(127, r2.status, r2.both());
        Cli.assertNoStackTrace(r2.both());
    }

    @Test
    void launchOfAFileThatIsNotExecutableIsStatus126(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("notes.txt"), "not a program\n");
        Cli r = Cli.run("launch", "-n", "1", "--", file.toString());
        assertEquals(126, r.status, r.both());
        assertEquals("jccl launch: " + file + ": permission denied (not an executable file)", r.err.strip(), r.both());
    }

    @Test
    void verifyTakesThreadsAndLocalAndRejectsAnythingElse() {
        String[] quick = {"--primitive", "all_reduce", "--dtype", "float32", "--op", "sum", "--count", "5", "--world",
            "2", "--reference", "java"};
        Cli threads = Cli.run(concat(new String[] {"verify", "--transport", "threads"}, quick));
        assertEquals(0, threads.status, threads.both());
        assertTrue(threads.out.startsWith("jccl verify: queue mesh (ranks as threads) against java model"),
                threads.both());
        assertTrue(threads.out.contains("Per-rank byte counters over threads"), threads.both());
        Cli.assertNoStackTrace(threads.both());
        Cli local = Cli.run(concat(new String[] {"verify", "--transport", "local"}, quick));
        assertEquals(threads.out, local.out, "local is another name for threads");
        assertUsageError(Cli.run("verify", "--transport", "queue"), "verify",
                "'queue' is not a transport: threads, shm or tcp");
        assertUsageError(Cli.run("verify", "--world", "2,0"), "verify", "'--world': 0 (it must be at least 1)");
        assertUsageError(Cli.run("verify", "--dtype", "float33"), "verify", "'--dtype': 'float33'");
        assertUsageError(Cli.run("verify", "--reference", "torch"), "verify", "'--reference': 'torch'");
    }

    @Test
    void trainTuneAndStoreCheckTheirValues() {
        assertUsageError(Cli.run("train", "--transport", "mpi"), "train", "'mpi' is not a transport");
        assertUsageError(Cli.run("train", "--modes", "ddp,bogus"), "train", "'--modes': 'bogus'");
        // it ran twice, and the second run's row replaced the first's
        assertUsageError(Cli.run("train", "--modes", "ddp,zero, DDP", "--steps", "2", "--skip-patterns"), "train",
                "Invalid value for option '--modes': ddp is given more than once");
        assertUsageError(Cli.run("train", "--optimizer", "lbfgs"), "train", "'--optimizer': 'lbfgs'");
        // checked before anything trains (a run-time failure after the single-rank run, exit 1, before)
        assertUsageError(Cli.run("train", "--ranks", "5"), "train", "'--ranks': 5 does not divide the global batch");
        assertUsageError(Cli.run("train", "--ranks", "5", "--modes", "pipeline", "--skip-patterns"), "train",
                "needs a multiple of 2 or 3, got 5");
        assertUsageError(Cli.run("train", "--ranks", "128", "--modes", "pipeline", "--skip-patterns"), "train",
                "which 64 does not divide");
        assertUsageError(Cli.run("train", "--plot", "/no/such/dir/x.png"), "train",
                "'--plot': the directory /no/such/dir does not exist");
        assertUsageError(Cli.run("tune", "--transport", "gloo"), "tune", "'gloo' is not a transport");
        assertUsageError(Cli.run("tune", "--ranks", "1"), "tune", "'--ranks': 1 (it must be at least 2)");
        assertUsageError(Cli.run("store", "--port", "70000"), "store", "'--port': 70000");
    }

    /**
     * A file a command cannot write is a usage error before anything is measured: bench made the directories of its
     * --json and --plot files after every row (and tune its --output's after its measurements), so one it could not
     * make failed the run with status 1 and lost the table; a directory given as the file failed alike.
     */
    @Test
    void anOutputFileThatCannotBeWrittenIsAUsageError(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("file"), "");
        String under = file.resolve("rows.json").toString(); // its directory cannot be made: a file is in its place
        String[] quick = {"--ranks", "2", "--sizes", "4", "--scale", "0.01"};
        assertUsageError(Cli.run(concat(new String[] {"bench", "--json", under}, quick)), "bench",
                "Invalid value for option '--json': cannot make the directory " + file + " (" + file
                        + " is not a directory)");
        assertUsageError(Cli.run(concat(new String[] {"bench", "--plot", dir.toString()}, quick)), "bench",
                "Invalid value for option '--plot': " + dir + " is a directory");
        assertUsageError(Cli.run("tune", "--transport", "threads", "--ranks", "2", "--large", "64K", "--scale", "0.01",
                "--output", under), "tune", "Invalid value for option '--output': cannot make the directory " + file);
        assertUsageError(Cli.run("train", "--plot", dir.toString()), "train",
                "Invalid value for option '--plot': " + dir + " is a directory");
        // a directory that can be made is made, and the file written there
        Path made = dir.resolve("a/b/rows.json");
        Cli r = Cli.run(concat(new String[] {"bench", "--json", made.toString()}, quick));
        assertEquals(0, r.status, r.both());
        assertTrue(Files.size(made) > 0, r.both());
    }

    /** A failure at run time: one line naming what failed, status 1; the trace only with --stacktrace. */
    @Test
    void aFailureAtRunTimeIsOneLineAndTheTraceOnlyOnRequest() throws Exception {
        try (ServerSocket busy = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            String port = Integer.toString(busy.getLocalPort());
            Cli r = Cli.run("store", "--host", "127.0.0.1", "--port", port);
            assertEquals(1, r.status, r.both());
            List<String> lines = r.err.lines().filter(l -> !l.contains("is not set")).collect(Collectors.toList());
            assertTrue(lines.get(0).startsWith("jccl store: cannot listen for the store on 127.0.0.1:" + port),
                    r.both());
            assertEquals("(--stacktrace prints the Java stack trace)", lines.get(lines.size() - 1), r.both());
            assertTrue(lines.size() <= 3, r.both());
            Cli.assertNoStackTrace(r.both());

            Cli traced = Cli.run("store", "--host", "127.0.0.1", "--port", port, "--stacktrace");
            assertEquals(1, traced.status, traced.both());
            assertTrue(traced.err.contains("\tat io.jccl.store.TcpStoreServer"), traced.both());
        }
    }

    /** The workers' log quoted in a failure keeps its messages and loses its stack frames. */
    @Test
    void aFailureQuotingWorkerLogsDropsTheirStackFrames() {
        IllegalStateException e = new IllegalStateException("bench workers failed: [rank 1] Exception in thread "
                + "\"main\" io.jccl.PeerAbortedException: rank 2 failed\n[rank 1] \tat io.jccl.Foo.bar(Foo.java:12)\n"
                + "[rank 1] \t... 7 more\n[rank 2] boom", new java.io.IOException("disk full"));
        List<String> lines = Failure.summary("jccl bench", e);
        assertEquals(List.of("jccl bench: bench workers failed: [rank 1] io.jccl.PeerAbortedException: rank 2 failed",
                "[rank 2] boom", "  caused by: IOException: disk full", "(--stacktrace prints the Java stack trace)"),
                String.join("\n", lines).lines().collect(Collectors.toList()));
    }

    /** The real main: its exit status is the one picocli computed, and a trace never reaches the terminal. */
    @ParameterizedTest
    @ValueSource(strings = {"bench --transport bogus", "bench --sizes 3X", "verify --transport bogus",
        "launch -n 0 -- true"})
    void theRealMainExitsWithStatus2(String args) throws Exception {
        String[] r = realMain(Map.of(), args.split(" "));
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].startsWith("Invalid value for option"), r[1]);
        Cli.assertNoStackTrace(r[1]);
    }

    /**
     * The real main run in a JVM of its own with {@code env} added to this one's environment (which the commands
     * read, and {@link Cli} cannot set): its exit status, and its stdout and stderr together.
     */
    private static String[] realMain(Map<String, String> env, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"), "-cp",
                System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        String out;
        try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            out = in.lines().collect(Collectors.joining("\n"));
        }
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return new String[] {Integer.toString(p.exitValue()), out};
    }

    private static String[] concat(String[] a, String[] b) {
        String[] c = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }
}
