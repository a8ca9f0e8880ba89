package io.jccl.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Real JVMs on two simulated hosts of the test bed (own network, host name, /dev/shm and /etc/hosts each; the
 * host names do not resolve, as in many containers), two ranks per host.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@SuppressWarnings("try") // the bed is held for the job's lifetime
class MultiHostTest {

    /**
     * It failed at start: with unresolvable host names every rank's identity was "unknown/boot id", jccl concluded
     * that all ranks shared memory, and every rank died on a missing segment of a rank on the other host.
     */
    @Test
    void shouldRunAcrossHostsWhoseNamesDoNotResolve() throws Exception {
        try (TestBed bed = TestBed.up(2);
             ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("ok", "-1", "60000"),
                     bed.env(2, Map.of()))) {
            for (int r = 0; r < 4; r++) {
                assertEquals(0, job.await(r, 120), job.dump());
                assertEquals("RESULT ok", job.line(r, "RESULT", 1), job.dump());
                // per pair: shared memory with the rank on the same host, TCP to the other host
                assertEquals("TRANSPORT shm+tcp", job.line(r, "TRANSPORT", 1), job.dump());
            }
        }
    }

    /**
     * With host names that resolve (every host lists every other in /etc/hosts) every pair used to talk TCP, the
     * two ranks of one host included: now the co-location proof, not the names, decides, and they share memory.
     */
    @Test
    void shouldShareMemoryWithinAHostWhoseNamesResolve() throws Exception {
        try (TestBed bed = TestBed.up(2, "--resolvable");
             ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of("ok", "-1", "60000"),
                     bed.env(2, Map.of()))) {
            for (int r = 0; r < 4; r++) {
                assertEquals(0, job.await(r, 120), job.dump());
                assertEquals("RESULT ok", job.line(r, "RESULT", 1), job.dump());
                assertEquals("TRANSPORT shm+tcp", job.line(r, "TRANSPORT", 1), job.dump());
            }
        }
    }

    /**
     * A rank on host 1 killed with SIGKILL: every rank of every host names it, within 5 s (its neighbour on host 1
     * over shared memory, the ranks of host 0 over TCP). {@code kill}: in the middle of 256 KiB allreduces, which
     * AUTO runs HIERARCHICAL, unpipelined, so the phases within a host go through the host's shared arena (a rank
     * waits there for its neighbour, who waits for the dead rank's ring across hosts); {@code kill-hierarchical}:
     * in the middle of pipelined hierarchical allreduces,
     * whose inter-host phase runs on a second thread of each rank (they pipeline where the link between hosts is
     * the limit: rank 0's tuning file, which every rank takes, says it is 1 Gbit/s).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"kill", "kill-hierarchical"})
    void shouldNameARankKilledOnAnotherHostEverywhere(String mode, @TempDir Path dir) throws Exception {
        Path tune = dir.resolve("tune.properties");
        Files.writeString(tune, "inter_host.link.alpha_us=60\ninter_host.link.beta_us_per_byte=0.0084\n");
        try (TestBed bed = TestBed.up(2);
             ProcessJob job = ProcessJob.start(4, FaultWorker.class, List.of(mode, "2", "300000"),
                     withTuneFile(bed.env(2, Map.of()), tune))) {
            assertEquals(137, job.await(2, 120), job.dump());
            long killedAt = Long.parseLong(job.line(2, "KILL", 1).substring(5));
            for (int r : new int[] {0, 1, 3}) {
                assertEquals(0, job.await(r, 60), job.dump());
                String result = job.line(r, "RESULT", 1);
                assertNotNull(result, job.dump());
                assertTrue(result.startsWith("RESULT PeerAbortedException origin=2 "), result + "\n" + job.dump());
                // the message names the dead rank as the job knows it (rank 2), not as its host's group does (0)
                assertTrue(!result.contains("(pid ") || result.contains("rank 2 (pid "), result + "\n" + job.dump());
                long detectMs = Long.parseLong(job.line(r, "DETECTED", 1).substring(9)) - killedAt;
                System.out.println("kill -9 across hosts (" + mode + "): rank " + r + " (host " + r / 2 + ") named rank 2 after "
                        + detectMs + " ms: " + result);
                assertTrue(detectMs < 5000, "rank " + r + " took " + detectMs + " ms\n" + job.dump());
            }
        }
    }

    /**
     * Hosts of different sizes (4 ranks on host 0, 1 on host 1): the rank alone on its host had a plain TCP
     * transport, priced the job with one host's {@code tcp} figures where the others used {@code inter_host}'s, and
     * AUTO chose another algorithm there than on the other ranks (allreduce of 15-23 KB: TREE against RING;
     * allgather of 7.7-9.6 KB: BRUCK against RING), so such calls failed with a mismatch. Every rank now has the
     * same kind of transport and layout: the same choice everywhere, at every size, and exact results.
     */
    @Test
    void shouldChooseAlikeOnHostsOfDifferentSizes() throws Exception {
        try (TestBed bed = TestBed.up(2)) {
            Map<Integer, Map<String, String>> env = fourAndOne(bed);
            try (ProcessJob job = ProcessJob.start(5, HierarchyWorker.class, List.of("auto-sweep"), env)) {
                String algos = null;
                for (int r = 0; r < 5; r++) {
                    assertEquals(0, job.await(r, 150), job.dump());
                    assertEquals("EXACT ok", job.line(r, "EXACT", 1), job.dump());
                    assertEquals("TRANSPORT shm+tcp", job.line(r, "TRANSPORT", 1), job.dump());
                    String mine = job.line(r, "ALGOS", 1);
                    assertNotNull(mine, job.dump());
                    if (algos == null) {
                        algos = mine;
                    }
                    assertEquals(algos, mine, "rank " + r + " chose otherwise than rank 0");
                }
            }
        }
    }

    /**
     * One bed at a time on a machine, its names being fixed: a second program's "up" (a bench run while the tests
     * run) killed every rank of the bed that was up and rebuilt it, and that program's "down" later took the first
     * owner's bed away. While the owner lives, another owner's "up" now fails naming it, and its "down" leaves the
     * bed up.
     */
    @Test
    void shouldRefuseASecondBedWhileItsOwnerLivesAndLeaveItUp() throws Exception {
        try (TestBed bed = TestBed.up(2)) {
            Process other = new ProcessBuilder("sleep", "120").start();
            try {
                String[] up = script(other.pid(), "up", "2");
                assertEquals("2", up[0], up[1]);
                assertTrue(up[1].contains("a test bed is already up, and its owner lives: process "
                        + ProcessHandle.current().pid()), up[1]);
                String[] down = script(other.pid(), "down");
                assertEquals("0", down[0], down[1]);
                assertTrue(down[1].contains("left up: the bed belongs to process " + ProcessHandle.current().pid()),
                        down[1]);
                String[] status = script(ProcessHandle.current().pid(), "status");
                assertEquals("2 hosts up", status[1].trim(), "the bed must still be up");
                assertTrue(Files.exists(Path.of("/run/netns/jcclbed-h1")), "host 1's namespace is gone");
            } finally {
                other.destroyForcibly();
            }
        }
    }

    /** Runs scripts/testbed.sh with {@code args} as the program {@code owner}: its exit status and its output. */
    private static String[] script(long owner, String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of("bash", TestBed.SCRIPT.toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put(io.jccl.launch.Bed.OWNER_ENV, Long.toString(owner));
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes(); // the script ends within seconds (up refused, down left)
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), String.join(" ", cmd) + " did not end");
        return new String[] {Integer.toString(p.exitValue()), new String(out, java.nio.charset.StandardCharsets.UTF_8)};
    }

    /**
     * The rank alone on its host aborts (4 + 1 ranks) and stays 8 s before it leaves: every other rank names it and
     * its reason within 5 s. Its transport has no local part, and its abort once failed on it before reaching any
     * peer, which heard of it only when it left.
     */
    @Test
    void shouldTellEveryRankOfAnAbortOnTheRankAloneOnItsHost() throws Exception {
        try (TestBed bed = TestBed.up(2)) {
            Map<Integer, Map<String, String>> env = fourAndOne(bed);
            try (ProcessJob job = ProcessJob.start(5, FaultWorker.class, List.of("abort", "4", "60000"), env)) {
                assertEquals(0, job.await(4, 120), job.dump());
                long abortedAt = Long.parseLong(job.line(4, "ABORT", 1).substring(6));
                for (int r = 0; r < 4; r++) {
                    assertEquals(0, job.await(r, 120), job.dump());
                    String result = job.line(r, "RESULT", 1);
                    assertTrue(result.startsWith("RESULT PeerAbortedException origin=4 ") && result.contains("gives up"),
                            result + "\n" + job.dump());
                    long detectMs = Long.parseLong(job.line(r, "DETECTED", 1).substring(9)) - abortedAt;
                    assertTrue(detectMs < 5000, "rank " + r + " took " + detectMs + " ms\n" + job.dump());
                }
            }
        }
    }

    /**
     * Hosts configured with arenas of different sizes ({@code JCCL_SHM_ARENA_BYTES} 1 MiB on host 1, the 4 MiB
     * default on host 0): the hierarchical allreduce cuts the pieces it sends between hosts by the arena's rounds,
     * and every host's arena takes rank 0's size, so a 4.4 MB allreduce through the hosts' arenas still agrees
     * (before, the hosts cut different pieces and every rank failed).
     */
    @Test
    void shouldTakeRankZerosArenaSizeOnEveryHost(@TempDir Path dir) throws Exception {
        // and rank 0's tuning file names the links as jccl tune --hosts did before session 23: a warning says that
        // AUTO prices the links across hosts with the built-in figures
        Path oldTune = dir.resolve("tune.properties");
        Files.writeString(oldTune, "tcp.link.alpha_us=52.8\ntcp.link.beta_us_per_byte=0.00165\n");
        try (TestBed bed = TestBed.up(2)) {
            Map<Integer, Map<String, String>> env = withTuneFile(bed.env(2, Map.of()), oldTune);
            env.get(2).put("JCCL_SHM_ARENA_BYTES", Integer.toString(1 << 20));
            env.get(3).put("JCCL_SHM_ARENA_BYTES", Integer.toString(1 << 20));
            try (ProcessJob job = ProcessJob.start(4, HierarchyWorker.class, List.of(), env)) {
                for (int r = 0; r < 4; r++) {
                    assertEquals(0, job.await(r, 150), job.dump());
                    assertEquals("EXACT ok", job.line(r, "EXACT", 1), job.dump());
                }
                assertTrue(job.dump().contains("has no inter_host or no intra_host figures"), job.dump());
            }
        }
    }

    /**
     * The hierarchical allreduce over the real shm+tcp transport: the same bits on every rank and from one job to
     * the next, exact integer sums; and AUTO, given a tuning file whose link between hosts is 1 Gbit/s, picks it
     * on every rank.
     */
    @Test
    void shouldRunTheHierarchicalAllReduceAcrossHostsWithTheSameBitsEverywhere(@TempDir Path dir) throws Exception {
        Path tune = dir.resolve("tune.properties");
        Files.writeString(tune, "inter_host.link.alpha_us=60\ninter_host.link.beta_us_per_byte=0.0084\n");
        try (TestBed bed = TestBed.up(2)) {
            String hash = null;
            for (int run = 0; run < 2; run++) {
                // rank 0's parameters are every rank's
                try (ProcessJob job = ProcessJob.start(4, HierarchyWorker.class, List.of(),
                        withTuneFile(bed.env(2, Map.of()), tune))) {
                    for (int r = 0; r < 4; r++) {
                        assertEquals(0, job.await(r, 150), job.dump());
                        assertEquals("TRANSPORT shm+tcp", job.line(r, "TRANSPORT", 1), job.dump());
                        assertEquals("ALGO HIERARCHICAL", job.line(r, "ALGO", 1), job.dump());
                        assertEquals("EXACT ok", job.line(r, "EXACT", 1), job.dump());
                        String h = job.line(r, "HASH", 1);
                        assertNotNull(h, job.dump());
                        if (hash == null) {
                            hash = h;
                        }
                        assertEquals(hash, h, "rank " + r + " of run " + run + " has other bits\n" + job.dump());
                    }
                }
            }
        }
    }

    /** {@code env} with {@code tune} as rank 0's tuning file, whose parameters every rank takes. */
    private static Map<Integer, Map<String, String>> withTuneFile(Map<Integer, Map<String, String>> env, Path tune) {
        Map<Integer, Map<String, String>> e = new HashMap<>();
        env.forEach((r, m) -> e.put(r, new HashMap<>(m)));
        e.get(0).put("JCCL_TUNE_FILE", tune.toString());
        return e;
    }

    private static String cli(String... args) {
        return BenchCommandTest.run(args);
    }

    /**
     * gloo conformance across the bed: jccl's ring (gloo's order) bit-identical to gloo's results, the hierarchical
     * allreduce within the rigorous bound, each rank a JVM on its host.
     */
    @Test
    void shouldAgreeWithGlooAcrossHosts() {
        String reference = "true".equalsIgnoreCase(System.getenv("CI")) ? "gloo" : "auto";
        for (String algorithm : new String[] {"ring", "hierarchical"}) {
            String out = cli("verify", "--hosts", "2", "--ranks-per-host", "2", "--algorithm", algorithm,
                    "--reference", reference, "--dtype", "float32,float64,int32", "--op", "sum,max",
                    "--primitive", "all_reduce,broadcast,all_gather,reduce_scatter", "--count", "4099,100000");
            System.out.println(out);
            assertTrue(out.contains("RESULT: PASS"), out);
            // it named the queue mesh of threads, the settings' default transport, which the bed does not use
            assertTrue(out.contains("jccl verify: processes on 2 simulated hosts of the test bed (2 per host"), out);
            assertTrue(out.contains("Per-rank byte counters over the test bed"), out);
            assertFalse(out.contains("ranks as threads"), out);
        }
    }

    /** jccl bench and gloo on the same bed, a rate-limited link: every row correct (times are printed only). */
    @Test
    void shouldBenchmarkOnTheBedWithGlooInTheSameRun() {
        String out = cli("bench", "--hosts", "2", "--ranks-per-host", "2", "--link", "1gbit", "--ops",
                "allreduce,broadcast", "--algorithms", "auto,hierarchical", "--sizes", "4,1M", "--scale", "0.02",
                "--compare", "gloo");
        System.out.println(out);
        assertTrue(out.contains("2 simulated hosts (2 per host, links 1gbit"), out);
        assertTrue(out.contains("HIERARCHICAL"), out);
    }

    /**
     * {@code jccl tune --hosts} measures both links AUTO prices across hosts: TCP between the bed's hosts and shared
     * memory within a host (it used to measure only the first, and price the second at the built-in figure), and
     * writes them as {@code inter_host} and {@code intra_host}, leaving one host's {@code tcp} and {@code shm} alone.
     */
    @Test
    void shouldTuneTheLinksBetweenAndWithinHosts(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("tune.properties");
        String out = cli("tune", "--hosts", "2", "--large", "256K", "--scale", "0.02", "--output", file.toString());
        System.out.println(out);
        assertTrue(out.contains("between hosts, tcp messages (2 ranks)"), out);
        assertTrue(out.contains("within a host, shm messages (2 ranks)"), out);
        assertTrue(out.contains("AUTO on 4 ranks over 2 hosts x 2 ranks (shm+tcp) now picks:"), out);
        java.util.Properties p = new java.util.Properties();
        try (java.io.InputStream in = Files.newInputStream(file)) {
            p.load(in);
        }
        io.jccl.pipeline.CostModel defaults = io.jccl.pipeline.CostModel.defaults();
        for (String link : new String[] {io.jccl.pipeline.CostModel.INTER_HOST, io.jccl.pipeline.CostModel.INTRA_HOST}) {
            double alpha = Double.parseDouble(p.getProperty(link + ".link.alpha_us"));
            assertTrue(alpha > 0 && alpha != defaults.link(link)[0], link + " not measured: " + p);
        }
        // under names of their own: one host's tcp and shm figures stay the built-in ones
        for (String link : new String[] {"tcp", "shm"}) {
            assertEquals(defaults.link(link)[0], Double.parseDouble(p.getProperty(link + ".link.alpha_us")), 0,
                    link + " changed: " + p);
        }
    }

    /** The environment of 5 ranks: ranks 0-3 on host 0, rank 4 alone on host 1. */
    private static Map<Integer, Map<String, String>> fourAndOne(TestBed bed) {
        Map<Integer, Map<String, String>> env = bed.env(4, Map.of());
        for (int r = 5; r < 8; r++) {
            env.remove(r);
        }
        return env;
    }
}
