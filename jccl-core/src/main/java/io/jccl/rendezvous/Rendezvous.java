package io.jccl.rendezvous;

import io.jccl.store.TcpStore;
import io.jccl.store.TcpStoreServer;
import io.jccl.store.PrefixStore;
import io.jccl.transport.hybrid.HybridTransport;

import io.jccl.store.Store;

import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.JcclSettings;
import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.security.JobSecret;
import io.jccl.transport.Transport;
import io.jccl.transport.tcp.TcpOptions;
import io.jccl.transport.shm.ShmTransport;
import io.jccl.transport.tcp.TcpTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;

/**
 * Forms the world communicator of a job whose ranks are processes: rank 0 serves a {@link TcpStore} at the
 * master address, every rank connects to it, publishes its address and meets the others through it, and the
 * store is closed once every rank is connected.
 */
public final class Rendezvous {
    private static final Logger LOG = LoggerFactory.getLogger(Rendezvous.class);

    /**
     * Environment variable: {@code external} when a standalone store ({@code jccl store}) already serves the
     * master address, so rank 0 does not start one ({@link JcclSettings#externalStore()}).
     */
    public static final String STORE_ENV = JcclSettings.STORE_ENV;

    private Rendezvous() {
    }

    /**
     * Per pair: shared memory between ranks that prove they share this host's shared-memory directory (see
     * {@link #shareMemory}), TCP between the others. One host: shm; one rank per host: tcp; otherwise a
     * {@link HybridTransport}. With {@code kind} tcp no proof is made (the layout is unknown: {@code hostOf()} is
     * null); under auto with one rank per host, TCP reports every rank its own host; with shm every rank must share
     * memory.
     * Every rank decides from every rank's published view, so the choices agree.
     */
    static Transport connectTransport(LaunchEnvironment env, Store store, TcpOptions tcp, String kind,
                                      JcclSettings settings) {
        Duration timeout = tcp.connectTimeout();
        int rank = env.rank();
        int world = env.worldSize();
        store.setString("host/" + rank, hostIdentity());
        agreeKind(rank, world, store, kind, timeout);
        // a rank whose set-up fails says so ("rank r: reason"), and the waits of every other rank's set-up end at
        // once with that reason (they waited for its keys until the connect timeout, naming a host-local index)
        SetupStore watched = new SetupStore(store, rank);
        try {
            if (kind.equals("tcp")) {
                return TcpTransport.connect(rank, world, watched, tcp);
            }
            if (rank == 0) { // the exchange buffers of every host's arena (below)
                store.setString("shm/arena-bytes", Integer.toString(settings.shmArenaBytes()));
            }
            String[] seen = shareMemory(rank, world, watched, settings.shmDirectory(), timeout);
            return connectTransport(rank, world, watched, tcp, kind, settings, seen);
        } catch (RuntimeException | Error e) {
            watched.publishFailure(e);
            throw e;
        }
    }

    /** As above, once every rank's view of the co-location probes ({@link #shareMemory}) is {@code seen}. */
    static Transport connectTransport(int rank, int world, Store store, TcpOptions tcp, String kind,
                                      JcclSettings settings, String[] seen) {
        Duration timeout = tcp.connectTimeout();
        // the host group from the layout, which every rank computes alike: this rank's own localGroup may hold a
        // rank the layout puts on a host of its own (sharing that is not transitive: 0-1 and 1-2 share, 0-2 do
        // not), which would never join this rank's shared-memory transport
        int[] group = hostGroup(rank, hostsOf(world, seen));
        // every host's arena has rank 0's exchange buffers (rank 0 published them before the co-location proof)
        int arenaBytes = Integer.parseInt(store.getString("shm/arena-bytes", timeout));
        return connectTransport(rank, world, store, tcp, kind, settings, group, () -> seen,
                r -> store.getString("host/" + r, timeout), "JCCL_TRANSPORT=" + kind, arenaBytes);
    }

    /**
     * The transport of rank {@code rank} of {@code world} under {@code kind} auto or shm, chosen from its host group
     * {@code group} (in increasing order) and the layout of every rank's view: shared memory where the group is the
     * whole world; TCP where it is this rank alone, with the layout ({@link TcpTransport#placeOnHosts}) where every
     * rank is alone, else as {@link HybridTransport#alone}, so that every rank prices the job alike; otherwise a
     * {@link HybridTransport}, shared memory within the group (its keys under {@code group-<its lowest rank>},
     * exchange buffers of {@code hostArenaBytes}, rank 0's) and TCP to the others. Whatever fails, exception or error,
     * the transports made so far are closed. {@link #connect} and jccl-spark's {@code BarrierRendezvous} both connect
     * through this method.
     *
     * <p>{@code group} may be what this rank knows before every rank's view has come (a Spark task starts from its
     * own view while its allGather rounds bring the others'): the transport that needs no layout (shared memory
     * among every rank, TCP alone) is connected first; then {@code views} gives every rank's view of the
     * co-location probes ({@link #shareMemory}), waiting for them if need be. Under shm, a group smaller than the
     * world fails then, naming who cannot see whom. A group that is not the one the layout of the views gives this
     * rank ({@link #hostsOf}, {@link #hostGroup}) fails, saying that the views disagree: every rank computes the same
     * layout, so ranks whose groups are their layout's meet, and a rank whose group is not would wait for peers that
     * went another way. {@link #connect} gives the layout's group, known already.
     *
     * @param hostName    the name of rank r's host, for the messages
     * @param kindAsGiven how the messages name {@code kind} as the user gave it ({@code JCCL_TRANSPORT=shm})
     */
    public static Transport connectTransport(int rank, int world, Store store, TcpOptions tcp, String kind,
                                             JcclSettings settings, int[] group,
                                             java.util.function.Supplier<String[]> views,
                                             java.util.function.IntFunction<String> hostName, String kindAsGiven,
                                             int hostArenaBytes) {
        Duration timeout = tcp.connectTimeout();
        boolean refused = kind.equals("shm") && group.length < world; // fails once the views say who cannot see whom
        ShmTransport local = null; // among every rank, or within the host group
        TcpTransport remote = null;
        try { // whatever fails from here, the transports made so far are closed
            if (!refused && group.length == world) {
                local = connectShm(rank, world, store, settings, timeout);
            } else if (!refused && group.length == 1) {
                remote = TcpTransport.connect(rank, world, store, tcp);
            }
            String[] seen = views.get();
            if (refused) {
                throw new IllegalArgumentException(kindAsGiven + " but the ranks do not all share memory: "
                        + notSharing(seen, hostName));
            }
            int[] hosts = hostsOf(world, seen);
            if (!java.util.Arrays.equals(hostGroup(rank, hosts), group)) {
                throw new IllegalStateException(disagreement(rank, seen, hostName));
            }
            if (group.length == world) {
                return local;
            }
            if (group.length == 1) {
                if (java.util.Arrays.stream(hosts).max().getAsInt() == world - 1) {
                    // one rank on every host: TCP alone, on every rank, with the layout, so that AUTO prices its
                    // messages as between hosts (a plain TCP transport, layout unknown, priced them with one host's
                    // tcp figures)
                    remote.placeOnHosts(hosts);
                    return remote;
                }
                // alone on this host where other hosts hold several: the same kind of transport and layout as
                // theirs, so that every rank prices the job alike (a plain TCP transport priced it with one host's
                // tcp figures and AUTO chose another algorithm there than on the other ranks: a mismatch on every
                // such call)
                return HybridTransport.alone(remote, "shm", hosts);
            }
            // several hosts, several ranks on this one: shared memory among them, TCP to the others
            remote = TcpTransport.connect(rank, world, store, tcp);
            int localRank = java.util.Arrays.binarySearch(group, rank);
            // every host's arena has rank 0's exchange buffers: the hierarchical algorithms cut the pieces they send
            // between hosts by them, so hosts configured differently (JCCL_SHM_ARENA_BYTES) would send pieces of
            // other sizes and fail every call. Its messages name the job's ranks, not the host group's, those of its
            // connection too
            local = ShmTransport.connect(localRank, group.length,
                    new PrefixStore("group-" + group[0], store), settings.shmDirectory(), settings.shmRingBytes(),
                    hostArenaBytes, settings.shmRegisteredBytes(), settings.oversubscribedSpins(), timeout, group);
            LOG.debug("rank {}: shared memory with ranks {}, TCP to the others", rank, group);
            return new HybridTransport(rank, world, group, local, remote, hosts);
        } catch (RuntimeException | Error e) {
            if (local != null) {
                closeAfter(e, local::close);
            }
            if (remote != null) {
                closeAfter(e, remote::close);
            }
            throw e;
        }
    }

    /**
     * Why {@code group}, the host group rank {@code rank} started connecting from, is not the one the layout of every
     * rank's {@code views} gives it ({@link #hostsOf}, {@link #hostGroup}), or null where it is: as
     * {@link #connectTransport(int, int, Store, TcpOptions, String, JcclSettings, int[], java.util.function.Supplier,
     * java.util.function.IntFunction, String, int)} fails, for a caller that can look before its set-up does.
     */
    public static String disagreement(int rank, int[] group, String[] views,
                                      java.util.function.IntFunction<String> hostName) {
        return java.util.Arrays.equals(hostGroup(rank, hostsOf(views.length, views)), group) ? null
                : disagreement(rank, views, hostName);
    }

    private static String disagreement(int rank, String[] views, java.util.function.IntFunction<String> hostName) {
        return "the ranks' views of who shares memory disagree (rank " + rank + " sees " + views[rank] + "; "
                + notSharing(views, hostName) + "): set JCCL_TRANSPORT=tcp";
    }

    /**
     * Every rank must be given the same {@code JCCL_TRANSPORT}: a rank with {@code tcp} among ranks with {@code auto}
     * would skip the co-location proof the others wait for, and every rank would wait until its deadline and fail
     * without saying why. Every rank publishes its kind and reads every other's, so every rank fails at once with
     * the same message, naming the first rank whose kind differs from rank 0's.
     */
    static void agreeKind(int rank, int world, Store store, String kind, Duration timeout) {
        if (world == 1) {
            return;
        }
        store.setString("transport/" + rank, kind);
        String first = store.getString("transport/0", timeout);
        for (int r = 1; r < world; r++) {
            String theirs = store.getString("transport/" + r, timeout);
            if (!theirs.equals(first)) {
                throw new IllegalArgumentException("rank " + rank + ": the ranks were given different transports: "
                        + "rank 0 has JCCL_TRANSPORT=" + first + ", rank " + r + " has JCCL_TRANSPORT=" + theirs
                        + "; give every rank the same (auto, shm or tcp)");
            }
        }
    }

    /**
     * Rank 0, across hosts: warns when its tuning file has no figures of the links across hosts
     * ({@code inter_host}, {@code intra_host}), as a file written by {@code jccl tune --hosts} before session 23
     * (which named them {@code tcp} and {@code shm}), so that AUTO prices them with the built-in figures.
     */
    private static void warnIfNotTunedAcrossHosts(java.nio.file.Path file, Transport transport) {
        int[] hosts = transport.hostOf(); // one rank per host: TCP with every rank its own host
        boolean acrossHosts = transport.name().contains("+")
                || hosts != null && java.util.Arrays.stream(hosts).max().orElse(0) > 0;
        if (!acrossHosts || !java.nio.file.Files.isRegularFile(file)) {
            return;
        }
        java.util.Properties p = new java.util.Properties();
        try (java.io.InputStream in = java.nio.file.Files.newInputStream(file)) {
            p.load(in);
        } catch (java.io.IOException e) {
            return; // CostModel.load has read it already; nothing to add
        }
        String inter = io.jccl.pipeline.CostModel.INTER_HOST + ".link.beta_us_per_byte";
        String intra = io.jccl.pipeline.CostModel.INTRA_HOST + ".link.beta_us_per_byte";
        if (p.getProperty(inter) == null || p.getProperty(intra) == null) {
            LOG.warn("rank 0: the tuning file {} has no {} or no {} figures, so AUTO prices the links between and "
                    + "within hosts with the built-in ones (jccl tune --hosts writes them; before session 23 it wrote "
                    + "tcp and shm, one host's names)", file, io.jccl.pipeline.CostModel.INTER_HOST,
                    io.jccl.pipeline.CostModel.INTRA_HOST);
        }
    }

    private static ShmTransport connectShm(int rank, int size, Store store, JcclSettings settings,
                                           Duration timeout) {
        return ShmTransport.connect(rank, size, store, settings.shmDirectory(), settings.shmRingBytes(),
                settings.shmArenaBytes(), settings.shmRegisteredBytes(), settings.oversubscribedSpins(), timeout);
    }

    /**
     * The host of every rank, from every rank's view: the ranks of one {@link #localGroup} are one host, hosts
     * numbered in the order of their lowest rank. Every rank computes the same layout.
     */
    public static int[] hostsOf(int world, String[] seen) {
        int[] host = new int[world];
        java.util.Arrays.fill(host, -1);
        int next = 0;
        for (int r = 0; r < world; r++) {
            if (host[r] < 0) {
                int[] group = localGroup(r, seen);
                for (int m : group) { // a member whose own view gives another group is a host of its own
                    if (host[m] < 0 && java.util.Arrays.equals(localGroup(m, seen), group)) {
                        host[m] = next;
                    }
                }
                host[r] = next++;
            }
        }
        return host;
    }

    /** The ranks of {@code rank}'s host in the layout {@code hosts} ({@link #hostsOf}), in increasing order. */
    public static int[] hostGroup(int rank, int[] hosts) {
        return java.util.stream.IntStream.range(0, hosts.length).filter(r -> hosts[r] == hosts[rank]).toArray();
    }

    /**
     * The ranks that share memory with {@code rank}, in increasing order: those it saw and that saw it, if they
     * all saw each other (a clique); otherwise, or if any view is inconsistent, {@code rank} alone (TCP only). A
     * rank that could not write its own probe (its view of itself is '0') is alone too. Every member computes the
     * same group from the same views.
     */
    public static int[] localGroup(int rank, String[] seen) {
        if (seen[rank].charAt(rank) != '1') { // its own probe failed (directory full, read-only, missing)
            return new int[] {rank};
        }
        java.util.List<Integer> g = new java.util.ArrayList<>();
        for (int r = 0; r < seen.length; r++) {
            if (seen[rank].charAt(r) == '1' && seen[r].charAt(rank) == '1') {
                g.add(r);
            }
        }
        for (int a : g) {
            for (int b : g) {
                if (seen[a].charAt(b) != '1') {
                    return new int[] {rank};
                }
            }
        }
        return g.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * Co-location that cannot lie: every rank writes a random token into a file of its shared-memory directory and
     * publishes the token; every rank opens every other rank's file read-write, as the shared-memory transport opens
     * a peer's segment, reads it and publishes which tokens it found; the ranks share memory only if each found the
     * other's token and their kernels' boot ids (published with {@code host/<r>}, {@link #hostIdentity}) are equal.
     * Returns every rank's view: character p of view r is '1' if rank r found rank p's token. The boot ids keep apart
     * hosts that mount one directory (JCCL_SHM_DIR, or the temp directory, on NFS); the read-write open keeps apart
     * ranks of other users that can read each other's files but not map them for writing. Host names (which may not
     * resolve, or may repeat across containers) and launcher variables such as {@code LOCAL_WORLD_SIZE} play no part.
     */
    static String[] shareMemory(int rank, int world, Store store, java.nio.file.Path dir, Duration timeout) {
        if (world == 1) {
            return new String[] {"1"};
        }
        if (rank == 0) {
            store.setString("probe/id", Long.toHexString(new java.security.SecureRandom().nextLong() & Long.MAX_VALUE));
        }
        String id = store.getString("probe/id", timeout);
        byte[] raw = new byte[16];
        new java.security.SecureRandom().nextBytes(raw);
        String token = java.util.HexFormat.of().formatHex(raw);
        java.nio.file.Path mine = dir.resolve("jccl-probe-" + id + "-" + rank);
        boolean wrote;
        try {
            java.nio.file.Files.writeString(mine, token);
            wrote = true;
        } catch (java.io.IOException | RuntimeException e) {
            LOG.debug("rank {}: cannot write the co-location probe {}: {}", rank, mine, e.toString());
            wrote = false;
        }
        try {
            store.setString("probe/token/" + rank, wrote ? token : "-");
            String boot = bootIdOf(store.getString("host/" + rank, timeout));
            StringBuilder seen = new StringBuilder();
            for (int r = 0; r < world; r++) {
                String theirs = store.getString("probe/token/" + r, timeout);
                boolean found = r == rank ? wrote : boot.equals(bootIdOf(store.getString("host/" + r, timeout)))
                        && readsProbe(dir.resolve("jccl-probe-" + id + "-" + r), theirs);
                seen.append(found ? '1' : '0');
            }
            store.setString("probe/seen/" + rank, seen.toString());
            String[] views = new String[world];
            for (int r = 0; r < world; r++) {
                views[r] = store.getString("probe/seen/" + r, timeout);
            }
            return views;
        } finally {
            try {
                java.nio.file.Files.deleteIfExists(mine); // every rank has read it: it published what it found
            } catch (java.io.IOException e) {
                LOG.debug("rank {}: cannot remove {}: {}", rank, mine, e.toString());
            }
        }
    }

    /**
     * Whether the co-location probe {@code file} of a peer holds {@code token} (its published token; "-": it wrote
     * none), opened read-write as the shared-memory transport opens a peer's segment: a file this process can read
     * but not write (another user's, 0644) is no proof, since the transport could not use that peer's segment.
     */
    public static boolean readsProbe(java.nio.file.Path file, String token) {
        if (token.equals("-")) {
            return false;
        }
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file,
                java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
            byte[] expected = token.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(expected.length + 1); // one more: nothing follows
            while (b.hasRemaining() && ch.read(b) >= 0) {
                // until the end of the file, or a byte more than the token
            }
            return b.position() == expected.length
                    && java.util.Arrays.equals(java.util.Arrays.copyOf(b.array(), expected.length), expected);
        } catch (java.io.IOException | RuntimeException e) {
            return false;
        }
    }

    /**
     * Which ranks could not see which, from every rank's published view, each named with its host
     * ({@code hostName}): for an error message.
     */
    private static String notSharing(String[] views, java.util.function.IntFunction<String> hostName) {
        StringBuilder sb = new StringBuilder();
        for (int r = 0; r < views.length; r++) {
            String seen = views[r];
            java.util.List<Integer> missing = new java.util.ArrayList<>();
            for (int p = 0; p < views.length; p++) {
                if (seen.charAt(p) == '0') {
                    missing.add(p);
                }
            }
            if (!missing.isEmpty()) {
                sb.append(sb.length() == 0 ? "" : "; ").append("rank ").append(r).append(" (")
                        .append(hostName.apply(r)).append(") cannot see ranks ").append(missing);
            }
        }
        return sb.toString();
    }

    /**
     * Host name and kernel boot id ({@link #bootId}), "name/boot id": the boot ids are equal for processes that can
     * share memory (the names, for the messages only, may repeat across hosts or containers).
     */
    static String hostIdentity() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            host = "unknown";
        }
        return host + "/" + bootId();
    }

    /**
     * This kernel's boot id (/proc/sys/kernel/random/boot_id): equal for processes that can share memory, different
     * for processes on two hosts that mount one directory; empty where there is none (not Linux), where the
     * co-location proof rests on the probe files alone.
     */
    public static String bootId() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (java.io.IOException | RuntimeException e) {
            return "";
        }
    }

    /** The boot id of a {@link #hostIdentity}: what follows its last '/'. */
    private static String bootIdOf(String hostIdentity) {
        return hostIdentity.substring(hostIdentity.lastIndexOf('/') + 1);
    }

    /** How long rank 0, which serves the store, stays after a failed join so that the others can read why. */
    private static final long LINGER_NANOS = 5_000_000_000L;

    /**
     * Every rank announces its rank and world size; each returns once ranks 0 to W-1 have all joined with the same
     * world size. Otherwise every rank that joined fails with the same message, naming what differs ("rank 2 says
     * world size 4, rank 0 says 3"), a rank that joined twice, or the ranks that never joined within
     * {@code timeout} and those that did.
     */
    static void join(int rank, int worldSize, Store store, Duration timeout) {
        join(rank, worldSize, store, timeout, startedMillis());
    }

    /** When this process started (epoch ms), or 0 where the system does not say. */
    private static long startedMillis() {
        return ProcessHandle.current().info().startInstant().map(java.time.Instant::toEpochMilli).orElse(0L);
    }

    /**
     * As {@link #join(int, int, Store, Duration)}, for a process started at {@code startedMillis} (epoch ms): a
     * failure the store holds from before then (a file:// directory an earlier job failed in) says so.
     */
    static void join(int rank, int worldSize, Store store, Duration timeout, long startedMillis) {
        join(rank, worldSize, store, timeout, startedMillis, () -> null);
    }

    /**
     * As above, with {@code refusals}: what the store this rank serves refused meanwhile (connections that failed
     * the handshake, such as a rank given another {@code JCCL_SECRET}), added to the failure of ranks that never
     * joined; null for nothing.
     */
    static void join(int rank, int worldSize, Store store, Duration timeout, long startedMillis,
                     java.util.function.Supplier<String> refusals) {
        long index = store.add("join/count", 1) - 1;
        store.setString("join/" + index, rank + " " + worldSize + " " + ProcessHandle.current().pid() + " "
                + hostName());
        long deadline = System.nanoTime() + timeout.toNanos();
        java.util.TreeMap<Integer, String> joined = new java.util.TreeMap<>();
        long read = 0;
        long pause = 1;
        String failure = null;
        while (failure == null) {
            if (store.check("join/failed")) { // "<epoch ms when written> <why>"
                String v = store.getString("join/failed", timeout);
                int space = v.indexOf(' ');
                long at = space > 0 ? parseOr(v.substring(0, space), Long.MAX_VALUE) : Long.MAX_VALUE;
                failure = v.substring(space + 1);
                if (at < startedMillis - 10_000) { // 10 s: the clocks of the hosts may differ a little
                    failure = "the store holds a failure written before this process started, by an earlier job or "
                            + "by ranks of this one that stopped waiting for it (a file:// store's directory must be "
                            + "new or empty): " + failure;
                }
                break;
            }
            long count = store.add("join/count", 0);
            for (; read < count && failure == null; read++) {
                String entry;
                try { // a slot taken is announced at once: wait for it only up to the join's own deadline
                    entry = store.getString("join/" + read,
                            Duration.ofNanos(Math.max(1_000_000L, deadline - System.nanoTime())));
                } catch (io.jccl.store.StoreException e) {
                    if (e.timedOutKey() == null) {
                        throw e;
                    }
                    failure = "a process took join slot " + read + " but never said which rank it is, within "
                            + timeout.toMillis() + " ms (it died while joining?); joined: "
                            + (joined.isEmpty() ? "none" : String.join(", ", joined.values()));
                    break;
                }
                String[] v = entry.split(" ", 4);
                int r;
                int w;
                try {
                    r = Integer.parseInt(v[0]);
                    w = Integer.parseInt(v[1]);
                    if (v.length < 4) {
                        throw new NumberFormatException("4 fields expected");
                    }
                } catch (NumberFormatException e) {
                    failure = "join slot " + read + " of the store holds '" + entry + "', not a rank's announcement "
                            + "(another program uses this store?)";
                    break;
                }
                String who = "rank " + r + " (pid " + v[2] + " on " + v[3] + ")";
                if (w != worldSize) {
                    failure = "rank " + r + " says world size " + w + ", rank " + rank + " says " + worldSize
                            + ": every rank must be started with the same world size";
                } else if (joined.containsKey(r)) {
                    failure = "rank " + r + " joined twice: " + joined.get(r) + " and " + who
                            + "; every rank number must be given to exactly one process (and a file:// store's directory "
                            + "must be new or empty: an earlier job's keys count)";
                } else {
                    joined.put(r, who);
                }
            }
            if (failure == null && joined.size() == worldSize) {
                return;
            }
            if (failure == null && System.nanoTime() - deadline >= 0) {
                java.util.List<Integer> missing = new java.util.ArrayList<>();
                for (int r = 0; r < worldSize; r++) {
                    if (!joined.containsKey(r)) {
                        missing.add(r);
                    }
                }
                String refused = refusals.get();
                failure = (missing.size() == 1 ? "rank " + missing.get(0) + " never joined"
                        : "ranks " + missing + " never joined") + " within " + timeout.toMillis() + " ms; joined: "
                        + (joined.isEmpty() ? "none" : String.join(", ", joined.values()))
                        + (refused == null ? "" : "; " + refused);
            }
            if (failure != null) {
                store.setString("join/failed", System.currentTimeMillis() + " " + failure);
                break;
            }
            sleepMillis(pause);
            pause = Math.min(pause * 2, 50);
        }
        store.add("join/told", 1);
        if (rank == 0) {
            // this rank serves the store: stay until every rank that joined has read why, or briefly
            long until = System.nanoTime() + LINGER_NANOS;
            while (store.add("join/told", 0) < store.add("join/count", 0) && System.nanoTime() - until < 0) {
                sleepMillis(10);
            }
        }
        throw new io.jccl.JcclException("rank " + rank + ": the job cannot start: " + failure, null);
    }

    private static long parseOr(String s, long otherwise) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return otherwise;
        }
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            return "an unnamed host";
        }
    }

    private static void sleepMillis(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new io.jccl.JcclException("interrupted while waiting for the other ranks to join", e);
        }
    }

    /** JCCL_DEBUG=INFO: this rank's place, the hosts, the transport of each kind of pair, the cost model. */
    private static void logStart(io.jccl.diag.DebugLog log, InitMethod init, LaunchEnvironment env,
                                 Transport transport, CommunicatorConfig config, String tuneSource) {
        io.jccl.diag.DebugLog.Subsys initSys = io.jccl.diag.DebugLog.Subsys.INIT;
        if (!log.isInfo(initSys) && !log.isInfo(io.jccl.diag.DebugLog.Subsys.TUNE)
                && !log.isInfo(io.jccl.diag.DebugLog.Subsys.NET)
                && !log.isInfo(io.jccl.diag.DebugLog.Subsys.SHM)) {
            return;
        }
        int[] hosts = transport.hostOf();
        int hostCount = hosts == null ? 1 : java.util.Arrays.stream(hosts).max().orElse(0) + 1;
        log.info(initSys, "rank {} of {} (local rank {}) on {}, pid {}: met through {}, transport {}", env.rank(),
                env.worldSize(), env.localRank(), hostIdentity(), ProcessHandle.current().pid(), init,
                transport.name());
        log.info(initSys, "rank {}: {} host(s), host of each rank {}", env.rank(), hostCount,
                hosts == null ? "unknown" : java.util.Arrays.toString(hosts));
        String name = transport.name();
        boolean alone = name.contains("+") && transport.hostArena() == null; // HybridTransport.alone
        if (alone) {
            log.info(io.jccl.diag.DebugLog.Subsys.SHM, "rank {}: alone on its host: no shared memory", env.rank());
        } else if (name.contains("shm")) {
            io.jccl.transport.SharedArena arena = transport.hostArena() != null ? transport.hostArena()
                    : transport.arena();
            log.info(io.jccl.diag.DebugLog.Subsys.SHM, "rank {}: pairs on one host talk through shared memory "
                    + "(rings of {} bytes, exchange buffers of {} bytes)", env.rank(),
                    config.settings().shmRingBytes(), arena != null ? arena.bufferBytes()
                            : config.settings().shmArenaBytes());
        }
        if (name.contains("tcp")) {
            log.info(io.jccl.diag.DebugLog.Subsys.NET, "rank {}: pairs {} talk over TCP", env.rank(),
                    name.contains("shm") ? "across hosts" : "(every one)");
        }
        log.info(io.jccl.diag.DebugLog.Subsys.TUNE, "rank {}: AUTO's cost model is {}: {}", env.rank(),
                tuneSource, config.tuneParameters() == null ? "this process's tuning file"
                        : config.tuneParameters().replace('\n', ' ').trim());
    }

    /**
     * Connects rank {@code env.rank()} to the others through the master the environment names ({@code env://}):
     * the secret, the TCP and shared-memory settings and {@code JCCL_STORE} come from {@code config}'s
     * {@link CommunicatorConfig#settings()}.
     */
    public static Communicator connect(LaunchEnvironment env, CommunicatorConfig config) {
        JcclSettings settings = config.settings();
        InitMethod init = env.masterAddr() != null && env.masterPort() >= 0
                ? InitMethod.tcp(env.masterAddr(), env.masterPort())
                : InitMethod.fromEnvironment(settings.environment(), env.worldSize());
        return connect(init, env, config, JobSecret.from(settings), settings.connectTimeout());
    }

    /**
     * Connects rank {@code env.rank()} of {@code env.worldSize()} to the others through the store {@code init}
     * names, authenticating peers with {@code secret}; {@code timeout} bounds the wait for every rank to join and
     * connect. Returns the world communicator once every rank holds one. The other settings come from
     * {@code config}'s {@link CommunicatorConfig#settings()}.
     */
    public static Communicator connect(InitMethod init, LaunchEnvironment env, CommunicatorConfig config,
                                       JobSecret secret, Duration timeout) {
        JcclSettings settings = config.settings();
        if (secret.isEmpty()) {
            LOG.warn("rank {}: {} is not set: peers are not authenticated (jccl launch sets it)", env.rank(),
                    JobSecret.ENV);
        }
        String kind = env.transport();
        if (!kind.equals("auto") && !kind.equals("tcp") && !kind.equals("shm")) {
            throw new IllegalArgumentException("JCCL_TRANSPORT must be auto, shm or tcp, got '" + kind + "'");
        }
        // a file store names no master: listen on loopback unless JCCL_BIND_ADDR says otherwise
        TcpOptions tcp = TcpOptions.from(settings, init.kind() == InitMethod.Kind.TCP ? init.host() : "127.0.0.1")
                .withSecret(secret).withConnectTimeout(timeout);
        TcpStoreServer server = null;
        Store client = null;
        Transport transport = null;
        DefaultCommunicator comm = null;
        boolean failed = true;
        try {
            if (init.kind() == InitMethod.Kind.FILE) {
                client = new io.jccl.store.FileStore(init.directory(), timeout);
            } else {
                int port = init.port();
                if (env.rank() == 0 && !settings.externalStore()) {
                    server = TcpStoreServer.start(tcp.bindHost(), port, secret);
                    port = server.port();
                } else if (port == 0) {
                    throw new IllegalArgumentException("rank " + env.rank() + " cannot find a store on port 0: "
                            + "give every rank the master's port");
                }
                TcpStore tcpClient = TcpStore.connect(init.host(), port, secret, timeout);
                client = tcpClient;
                if (tcp.advertiseHost() == null && !tcp.bindHost().startsWith("127.")) {
                    // the address this rank reaches the master from: reachable by the others whatever the names
                    tcp = tcp.withAdvertiseHost(tcpClient.localAddress());
                }
            }
            Store store = new PrefixStore("jccl", client);
            TcpStoreServer served = server;
            join(env.rank(), env.worldSize(), store, timeout, startedMillis(),
                    () -> served == null ? null : served.refusals());
            transport = connectTransport(env, store, tcp, kind, settings);
            // AUTO's parameters are rank 0's on every rank: tuning files that differ between hosts (tuned on one
            // only, or on other hardware), or parameters a program gives on some ranks and not others or differently,
            // must not make the ranks choose different algorithms (or a hierarchical algorithm's phases differently)
            if (env.rank() == 0) {
                boolean given = config.tuneParameters() != null;
                String text;
                try {
                    text = given ? io.jccl.pipeline.CostModel.parse(config.tuneParameters()).toText()
                            : io.jccl.pipeline.CostModel.load(settings.tuneFile()).toText();
                } catch (RuntimeException e) { // the others hear of it at once, not at their deadline
                    store.setString("tune/source", "rank 0 failed");
                    store.setString("tune", "!" + e.getMessage());
                    throw e;
                }
                store.setString("tune/source", given ? "given by rank 0's program"
                        : java.nio.file.Files.isRegularFile(settings.tuneFile()) ? "rank 0's " + settings.tuneFile()
                        : "defaults (rank 0 has no " + settings.tuneFile() + ")");
                store.setString("tune", text);
                if (!given) {
                    warnIfNotTunedAcrossHosts(settings.tuneFile(), transport);
                }
            }
            String agreed = store.getString("tune", timeout);
            if (agreed.startsWith("!")) {
                throw new IllegalStateException("rank " + env.rank() + ": rank 0 could not read its tuning parameters, "
                        + "which every rank takes: " + agreed.substring(1));
            }
            String tuneSource = store.getString("tune/source", timeout);
            if (config.tuneParameters() != null && env.rank() != 0 && !io.jccl.pipeline.CostModel.sameParameters(config.tuneParameters(), agreed)) {
                LOG.warn("rank {}: the tuning parameters its program gave differ from rank 0's ({}), or do not parse; "
                        + "AUTO uses rank 0's on every rank, so that every rank chooses alike", env.rank(), tuneSource);
            }
            config = config.withTuneParameters(agreed);
            logStart(io.jccl.diag.DebugLog.of(settings), init, env, transport, config, tuneSource);
            // made before the barrier: a rank that cannot make it (JCCL_TRACE's directory not writable) tells the
            // others why while they wait in the barrier (made after it, the others' first call learned only that
            // this rank had closed its communicator)
            try {
                comm = new DefaultCommunicator(transport, config);
            } catch (RuntimeException e) {
                try {
                    DefaultCommunicator.abortConnect(transport, config, "cannot make its world communicator: "
                            + e.getMessage());
                } catch (RuntimeException notTold) {
                    e.addSuppressed(notTold);
                }
                throw e;
            }
            // every rank is connected: the store is no longer needed. The barrier runs on a communicator of its
            // own, so the user's calls are numbered from 0 in errors and traces.
            DefaultCommunicator.connectBarrier(transport, config);
            if (init.kind() == InitMethod.Kind.FILE && env.rank() == 0) {
                ((io.jccl.store.FileStore) client).clear();
            }
            failed = false;
            return comm;
        } catch (RuntimeException | Error e) {
            if (comm != null) {
                closeAfter(e, comm::close); // and its transport
            } else if (transport != null) {
                closeAfter(e, transport::close);
            }
            throw e;
        } finally {
            if (client != null) {
                client.close();
            }
            if (server != null) {
                if (failed) { // the others may still be reading why (a marker rank 0 published): let them, briefly
                    server.closeWhenIdle(Duration.ofSeconds(3));
                } else {
                    server.close();
                }
            }
        }
    }

    /** Closes {@code what} after {@code failure}, whose reason stays the one thrown: a failure to close is added to it. */
    private static void closeAfter(Throwable failure, Runnable what) {
        try {
            what.run();
        } catch (RuntimeException | Error e) {
            failure.addSuppressed(e);
        }
    }
}
