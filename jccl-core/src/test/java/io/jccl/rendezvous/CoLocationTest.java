package io.jccl.rendezvous;

import io.jccl.JcclSettings;
import io.jccl.store.InMemoryStore;
import io.jccl.transport.Transport;
import io.jccl.transport.tcp.TcpOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** Who shares memory with whom, from the ranks' views of each other's co-location probes. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CoLocationTest {
    /**
     * A thread per rank: the ranks wait for each other, and the common pool may have fewer threads than ranks (one
     * on JDK 25 with 2 cores).
     */
    private static final java.util.concurrent.Executor THREADS = r -> {
        Thread t = new Thread(r, "rank");
        t.setDaemon(true);
        t.start();
    };


    /**
     * A rank that could not write its own probe (its shared-memory directory full, read-only or missing) saw itself
     * as '0': its group was empty, and the rendezvous failed with an ArrayIndexOutOfBoundsException instead of
     * connecting it over TCP. It is now alone, as the layout has it.
     */
    @Test
    void aRankWhoseOwnProbeFailedIsAlone() {
        String[] seen = {"101", "000", "101"};
        assertArrayEquals(new int[] {1}, Rendezvous.localGroup(1, seen));
        assertArrayEquals(new int[] {0, 2}, Rendezvous.localGroup(0, seen));
        assertArrayEquals(new int[] {0, 1, 0}, Rendezvous.hostsOf(3, seen));
    }

    /** Connects ranks 0 to views.length - 1 from the given views (on threads); each rank's transport name or error. */
    private static List<String> connect(String[] views, Path dir, Duration timeout) throws Exception {
        int world = views.length;
        InMemoryStore store = new InMemoryStore();
        store.setString("shm/arena-bytes", Integer.toString(JcclSettings.SHM_ARENA_DEFAULT));
        JcclSettings settings = JcclSettings.from(Map.of("JCCL_SHM_DIR", dir.toString()), Map.of());
        TcpOptions tcp = TcpOptions.from(settings, "127.0.0.1").withConnectTimeout(timeout);
        List<CompletableFuture<String>> fs = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            int rank = r;
            fs.add(CompletableFuture.supplyAsync(() -> {
                try {
                    Transport t = Rendezvous.connectTransport(rank, world, store, tcp, "auto", settings, views);
                    String name = t.name() + " " + java.util.Arrays.toString(t.hostOf());
                    t.close();
                    return name;
                } catch (RuntimeException e) {
                    return e.toString();
                }
            }, THREADS));
        }
        List<String> out = new ArrayList<>();
        for (CompletableFuture<String> f : fs) {
            out.add(f.get(50, TimeUnit.SECONDS));
        }
        return out;
    }

    /**
     * Sharing that is not transitive (0-1 and 1-2 share, 0-2 do not): the layout puts every rank on a host of its
     * own, but rank 0 took its own localGroup {0, 1} and rank 2 {1, 2} and waited in a shared-memory set-up for
     * rank 1, which had gone TCP, until the connect timeout. The group now comes from the layout: every rank
     * connects over TCP.
     */
    @Test
    void sharingThatIsNotTransitiveGivesEveryRankTheLayoutsGroup(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        String[] seen = {"110", "111", "011"};
        assertArrayEquals(new int[] {0, 1, 2}, Rendezvous.hostsOf(3, seen));
        List<String> out = connect(seen, dir, Duration.ofSeconds(5));
        for (int r = 0; r < 3; r++) {
            // every rank its own host: the layout, which AUTO prices with the figures between hosts
            assertEquals("tcp [0, 1, 2]", out.get(r), "rank " + r + ": " + out.get(r));
        }
    }

    /**
     * The transport choice Rendezvous and jccl-spark's BarrierRendezvous share: a caller that starts from a group of
     * its own (Spark: the rank's own view, before the others' have come) and finds that the layout of every view
     * gives it another fails, saying that the views disagree, before it waits for peers that went another way; under
     * shm, a group smaller than the world fails naming who cannot see whom, the kind as the caller's users gave it.
     */
    @Test
    void aGroupThatIsNotTheLayoutsFailsAndShmNamesWhoCannotSeeWhom(@org.junit.jupiter.api.io.TempDir Path dir) {
        JcclSettings settings = JcclSettings.from(Map.of("JCCL_SHM_DIR", dir.toString()), Map.of());
        TcpOptions tcp = TcpOptions.from(settings, "127.0.0.1").withConnectTimeout(Duration.ofSeconds(5));
        String[] views = {"100", "010", "001"}; // every rank on a host of its own
        java.util.function.IntFunction<String> host = r -> "host" + r;
        IllegalStateException disagree = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                () -> Rendezvous.connectTransport(0, 3, new InMemoryStore(), tcp, "auto", settings, new int[] {0, 1},
                        () -> views, host, "JCCL_TRANSPORT=auto", JcclSettings.SHM_ARENA_DEFAULT));
        assertEquals("the ranks' views of who shares memory disagree (rank 0 sees 100; rank 0 (host0) cannot see "
                + "ranks [1, 2]; rank 1 (host1) cannot see ranks [0, 2]; rank 2 (host2) cannot see ranks [0, 1]): set "
                + "JCCL_TRANSPORT=tcp", disagree.getMessage());
        assertEquals(disagree.getMessage(), Rendezvous.disagreement(0, new int[] {0, 1}, views, host));
        assertEquals(null, Rendezvous.disagreement(0, new int[] {0}, views, host));
        IllegalArgumentException shm = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> Rendezvous.connectTransport(0, 3, new InMemoryStore(), tcp, "shm", settings, new int[] {0},
                        () -> views, host, "transport shm", JcclSettings.SHM_ARENA_DEFAULT));
        assertEquals("transport shm but the ranks do not all share memory: rank 0 (host0) cannot see ranks [1, 2]; "
                + "rank 1 (host1) cannot see ranks [0, 2]; rank 2 (host2) cannot see ranks [0, 1]", shm.getMessage());
    }

    /** Every rank's view from {@link Rendezvous#shareMemory} on threads, rank r published as host {@code hosts[r]}. */
    private static List<String> views(String[] hosts, Path dir) throws Exception {
        InMemoryStore store = new InMemoryStore();
        for (int r = 0; r < hosts.length; r++) {
            store.setString("host/" + r, hosts[r]);
        }
        List<CompletableFuture<String[]>> fs = new ArrayList<>();
        for (int r = 0; r < hosts.length; r++) {
            int rank = r;
            fs.add(CompletableFuture.supplyAsync(() -> Rendezvous.shareMemory(rank, hosts.length, store, dir,
                    Duration.ofSeconds(20)), THREADS));
        }
        List<String> out = new ArrayList<>();
        for (CompletableFuture<String[]> f : fs) {
            out.add(String.join(",", f.get(30, TimeUnit.SECONDS)));
        }
        return out;
    }

    /**
     * Ranks whose kernels differ (two hosts that mount one JCCL_SHM_DIR, or temp directory, over NFS) read each
     * other's probes: they were taken for one host, and shared memory was set up across hosts. Their boot ids now
     * keep them apart; the host names play no part (here they are equal, and differ where the boot ids are equal).
     */
    @Test
    void ranksOfKernelsWithOtherBootIdsDoNotShareMemoryThoughTheyShareADirectory(
            @org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        assertEquals(List.of("11,11", "11,11"), views(new String[] {"a/boot-1", "b/boot-1"}, dir));
        assertEquals(List.of("10,01", "10,01"), views(new String[] {"a/boot-1", "a/boot-2"}, dir));
    }

    /**
     * A peer's probe that this process can read but not open for writing (another user's file, 0644, in a shared
     * /dev/shm) proved co-location, and the shared-memory transport then failed at start opening that peer's
     * segment read-write. The proof now opens it read-write, as the transport would. (Tests run as root, which may
     * write any file of its users: a procfs file that even root cannot open for writing stands in for it.)
     */
    @Test
    void aProbeThatCannotBeOpenedForWritingProvesNothing(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        Path readOnly = Path.of("/proc/sys/kernel/random/boot_id");
        org.junit.jupiter.api.Assumptions.assumeTrue(java.nio.file.Files.isReadable(readOnly), "Linux only");
        String content = java.nio.file.Files.readString(readOnly);
        Path probe = java.nio.file.Files.writeString(dir.resolve("probe"), "0123456789abcdef");
        org.junit.jupiter.api.Assertions.assertTrue(Rendezvous.readsProbe(probe, "0123456789abcdef"));
        org.junit.jupiter.api.Assertions.assertFalse(Rendezvous.readsProbe(probe, "0123456789abcde"));
        org.junit.jupiter.api.Assertions.assertFalse(Rendezvous.readsProbe(probe, "-"));
        org.junit.jupiter.api.Assertions.assertFalse(Rendezvous.readsProbe(readOnly, content));
    }
}
