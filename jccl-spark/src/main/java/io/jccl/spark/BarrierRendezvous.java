package io.jccl.spark;

import io.jccl.rendezvous.Rendezvous;

import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.JcclException;
import io.jccl.JcclSettings;
import io.jccl.pipeline.CostModel;
import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.security.JobSecret;
import io.jccl.transport.Transport;
import io.jccl.transport.tcp.TcpOptions;
import io.jccl.transport.tcp.TcpTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * Forms a world communicator from nothing but an {@link AllGather} among the ranks: no store server, no port
 * anyone must know beforehand.
 *
 * <ol>
 *   <li>Round 1: every rank publishes the attempt's identity, its host, its kernel's boot id and the token of a
 *   co-location probe (a file of its shared-memory directory written before the round, as {@code Rendezvous} proves
 *   co-location: ranks of one boot id that read each other's token, opening the file read-write, share memory);
 *   rank 0 also the job secret it generated, AUTO's cost model (every
 *   rank takes rank 0's) and its arena size (every host's arena takes it).</li>
 *   <li>Then the transports (TCP between hosts, shared memory within one) connect through a {@link GatherStore}
 *   on a thread of their own, while this thread runs rounds that carry the keys each rank set (which probes it
 *   read, its listening address, its segment) until every rank says it is connected, or one says why it is not:
 *   then every rank fails with that reason. TCP takes two more rounds (addresses, then "connected"), shared
 *   memory three (its job id, the segments, "connected").</li>
 * </ol>
 *
 * <p>Every message carries the identity (in Spark: application, stage, stage attempt, partitions), and the secret
 * that authenticates every connection is derived from rank 0's random secret and that identity, so ranks of two
 * attempts can never connect to each other.
 */
public final class BarrierRendezvous {
    private static final Logger LOG = LoggerFactory.getLogger(BarrierRendezvous.class);
    /**
     * How long a rank whose set-up neither waits for a key it lacks, nor has ended, nor has keys to publish (it is
     * busy, or waits for peers to dial it) waits before it joins the next round anyway. A round costs about a
     * second whatever it carries (BarrierTaskContext polls its answer once a second), so a rank joins only when
     * the round can bring something: its keys, its end, or keys it waits for.
     */
    private static final long IDLE_MILLIS = 1000;
    /** How long a rank that set keys waits for more before it publishes them (they often come in pairs). */
    private static final long SETTLE_MILLIS = 30;
    /**
     * How long past the connect timeout the set-up rounds may go on: a set-up whose own waits (each bounded by the
     * connect timeout) have not ended it by then fails every rank, in the next round, naming the rank. The margin
     * lets a set-up that failed at its own timeout say why first.
     */
    static final long SETUP_MARGIN_MILLIS = 10_000;
    private static final String RUNNING = "run";
    private static final String DONE = "done";
    private static final String FAILED = "fail";

    private BarrierRendezvous() {
    }

    /**
     * Connects rank {@code rank} of {@code world}. {@code identity} must be the same string on every rank of
     * this world and differ between worlds that may overlap in time (a stage attempt); {@code host} is the address
     * peers on other hosts reach this rank at; {@code transport} is {@code auto}, {@code tcp} or {@code shm} (as
     * {@code JCCL_TRANSPORT}). The connect timeout and the shared-memory settings come from {@code config}'s
     * settings. The set-up rounds end within the connect timeout and {@link #SETUP_MARGIN_MILLIS}: past that every
     * rank fails, in the next round (each {@code allGather} itself waits as long as {@code gather} lets it).
     */
    public static Communicator connect(int rank, int world, String identity, String host, String transport,
                                       AllGather gather, CommunicatorConfig config) {
        if (world < 1 || rank < 0 || rank >= world) {
            throw new IllegalArgumentException("rank must be in [0, world) of " + identity + ": rank=" + rank
                    + ", world=" + world);
        }
        if (!transport.equals("auto") && !transport.equals("tcp") && !transport.equals("shm")) {
            throw new IllegalArgumentException("rank " + rank + " (" + identity + "): transport must be auto, shm or"
                    + " tcp, got '" + transport + "'");
        }
        JcclSettings settings = config.settings();
        Duration timeout = settings.connectTimeout();
        long started = System.nanoTime();

        // round 1: identity, secret, cost model, arena size, transport kind, co-location probe, host, boot id. The probe is in place before this rank
        // joins the round, so every rank that reads it after the round finds it if it shares the directory.
        Path dir = settings.shmDirectory();
        SecureRandom random = new SecureRandom();
        byte[] raw = new byte[16];
        random.nextBytes(raw);
        String token = HexFormat.of().formatHex(raw);
        String probeName = "jccl-spark-probe-" + HexFormat.of().formatHex(
                JobSecret.none().proof("jccl-spark probe", identity.getBytes(StandardCharsets.UTF_8)), 0, 8) + "-";
        Path probe = dir.resolve(probeName + rank);
        boolean wrote = !transport.equals("tcp") && writeProbe(probe, token, rank);
        String secretHex = "-";
        String tune = "-";
        String arenaBytes = "-";
        if (rank == 0) { // AUTO's parameters and every host's arena size are rank 0's, as in Rendezvous
            secretHex = JobSecret.generate().toHex();
            try {
                tune = config.tuneParameters() != null ? CostModel.parse(config.tuneParameters()).toText()
                        : CostModel.load(settings.tuneFile()).toText();
            } catch (RuntimeException e) { // every rank hears of it in this round, rank 0 too, and fails saying so
                tune = "!" + e.getMessage();
            }
            arenaBytes = Integer.toString(settings.shmArenaBytes());
        }
        String[][] first;
        String[] hosts = new String[world];
        StringBuilder seen = new StringBuilder();
        try {
            first = exchange(gather, identity, rank, world, hostName() + " (" + host + ")", wrote ? token : "-",
                    secretHex, tune, arenaBytes, transport, Rendezvous.bootId());
        } catch (RuntimeException | Error e) {
            deleteQuietly(probe);
            throw e;
        }
        for (int r = 0; r < world; r++) {
            hosts[r] = first[r][2];
            // as Rendezvous.shareMemory: one kernel (boot id) and a probe this rank can open read-write, as the
            // shared-memory transport opens a peer's segment
            boolean found = r == rank ? wrote : wrote && first[r][8].equals(first[rank][8])
                    && Rendezvous.readsProbe(dir.resolve(probeName + r), first[r][3]);
            seen.append(found ? '1' : '0');
        }
        if (first[0][5].startsWith("!")) {
            deleteQuietly(probe);
            throw new JcclException("rank " + rank + " (" + identity + "): rank 0 could not read its tuning "
                    + "parameters, which every rank takes: " + first[0][5].substring(1), null);
        }
        for (int r = 1; r < world; r++) { // every task one kind of transport, or none connects (as in Rendezvous)
            if (!first[r][7].equals(first[0][7])) {
                deleteQuietly(probe);
                throw new JcclException("rank " + rank + " (" + identity + "): the tasks were given different "
                        + "transports: rank 0 has " + first[0][7] + ", rank " + r + " has " + first[r][7]
                        + "; give every task the same (auto, shm or tcp)", null);
            }
        }
        JobSecret secret = derive(JobSecret.fromHex(first[0][4]), identity);
        // rank 0's parameters on every rank (the program's own on a rank, where they differ, would let AUTO choose
        // otherwise than its peers: a mismatch on every such call)
        if (config.tuneParameters() != null && rank != 0 && !CostModel.sameParameters(config.tuneParameters(), first[0][5])) {
            LOG.warn("rank {}: the tuning parameters its program gave differ from rank 0's (or do not parse); AUTO "
                    + "uses rank 0's on every rank, so that every rank chooses alike", rank);
        }
        config = config.withTuneParameters(first[0][5]);
        int hostArenaBytes = Integer.parseInt(first[0][6]);
        String bind = settings.bindAddress(host);
        TcpOptions tcp = new TcpOptions(bind, settings.advertiseAddress() != null ? settings.advertiseAddress()
                : bind.equals("0.0.0.0") ? host : null, secret, timeout, settings.maxMessageBytes());

        // round 2 and on: the transports connect through a store carried by the rounds, starting at once from
        // this rank's own view of who shares memory with it; every rank's view comes with the first keys
        GatherStore store = new GatherStore();
        String view = seen.toString();
        int[] group = groupOf(rank, view);
        CompletableFuture<Transport> result = new CompletableFuture<>();
        Thread worker = new Thread(() -> {
            try {
                Transport made = connectTransport(rank, world, store, tcp, transport, settings, view, group, hosts,
                        hostArenaBytes);
                if (!result.complete(made)) { // failed meanwhile (viewCheck below)
                    made.close();
                }
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        }, "jccl-spark-connect-" + rank);
        worker.setDaemon(true);
        // the set-up's deadline counts from here, once every task has joined: the first round waits for the stage's
        // last task as long as Spark lets it (a late task, a cold executor), which no set-up should be failed for
        long connecting = System.nanoTime();
        worker.start();
        String failure = null;
        int[] rounds = {0};
        try {
            // every rank reads the probes before it joins the next round: once that round is over, none needs it
            // the views come with the first keys: where the group this rank started connecting from (its own view's)
            // is not the one the layout of every rank's gives it, it fails then, while its set-up may still wait for
            // peers that went another way (it waited until the connect timeout); the set-up checks the same once it
            // has the views (Rendezvous.connectTransport), for a transport connected before this check could run
            java.util.function.Supplier<String> viewCheck = () -> {
                if (transport.equals("tcp")) {
                    return null;
                }
                String[] views = new String[world];
                for (int r = 0; r < world; r++) {
                    if (!store.check("view/" + r)) {
                        return null;
                    }
                    views[r] = store.getString("view/" + r, Duration.ofMillis(1));
                }
                return Rendezvous.disagreement(rank, group, views, r -> hosts[r]);
            };
            failure = runRounds(gather, identity, rank, world, store, result, () -> deleteQuietly(probe), viewCheck,
                    rounds, connecting, timeout);
        } catch (RuntimeException | Error e) {
            deleteQuietly(probe);
            abandon(worker, result);
            throw e;
        }
        if (failure != null) {
            abandon(worker, result);
            throw new JcclException("rank " + rank + " (" + identity + "): the communicator cannot be formed: "
                    + failure, null);
        }
        Transport t = result.join();
        try {
            if (rank == 0) {
                LOG.info("{}: {} ranks connected over {} in {} ms ({} allGather rounds)", identity, world, t.name(),
                        (System.nanoTime() - started) / 1_000_000, 1 + rounds[0]);
            }
            // The last round, in which every rank said it is connected, is the barrier that ends the set-up: no
            // DefaultCommunicator.connectBarrier. (That barrier, on a communicator of its own, would also open a
            // window in which a rank still in it takes a peer's first shared-memory call, published in the arena
            // with the same sequence number 0, for a mismatched call.)
            return new DefaultCommunicator(t, config);
        } catch (RuntimeException e) {
            t.close();
            throw e;
        }
    }

    /**
     * {@code Rendezvous.connectTransport} itself (shared memory within the ranks that read each other's probes, TCP
     * to the others), started from this rank's own view, {@code group}, before the others' have come: what needs
     * no layout (shared memory where the group is the world, TCP where it is this rank alone) connects at once,
     * while the rounds bring every rank's view (published here as {@code view/<rank>}). Once they have come it
     * checks that the group is the one their layout gives this rank (it is unless the directory is shared one way):
     * otherwise it fails, and so does every rank.
     */
    private static Transport connectTransport(int rank, int world, GatherStore store, TcpOptions tcp, String kind,
                                              JcclSettings settings, String view, int[] group, String[] hosts,
                                              int hostArenaBytes) {
        if (kind.equals("tcp")) {
            return TcpTransport.connect(rank, world, store, tcp);
        }
        store.setString("view/" + rank, view);
        return Rendezvous.connectTransport(rank, world, store, tcp, kind, settings, group, () -> {
            String[] views = new String[world];
            for (int r = 0; r < world; r++) {
                views[r] = store.getString("view/" + r, tcp.connectTimeout());
            }
            return views;
        }, r -> hosts[r], "transport " + kind, hostArenaBytes);
    }

    /** The group {@code view} gives {@code rank}: the ranks it read, where it read itself; else itself alone. */
    private static int[] groupOf(int rank, String view) {
        List<Integer> guess = new ArrayList<>();
        for (int r = 0; r < view.length(); r++) {
            if (view.charAt(r) == '1') {
                guess.add(r);
            }
        }
        return guess.contains(rank) ? guess.stream().mapToInt(Integer::intValue).toArray() : new int[] {rank};
    }

    /**
     * Rounds of the keys each rank's transport set-up published, until no rank is still connecting. Returns null
     * when every rank connected, else the reasons of the ranks that failed. A set-up still running past
     * {@code startedNanos} (when it started, after the first round) plus {@code connectTimeout} and
     * {@link #SETUP_MARGIN_MILLIS} is failed, so that every rank fails in the next round.
     */
    static String runRounds(AllGather gather, String identity, int rank, int world, GatherStore store,
                            CompletableFuture<Transport> result, Runnable afterFirstRound,
                            java.util.function.Supplier<String> check, int[] rounds, long startedNanos,
                            Duration connectTimeout) {
        boolean firstRound = true;
        long deadline = startedNanos + connectTimeout.toNanos() + SETUP_MARGIN_MILLIS * 1_000_000L;
        while (true) {
            try {
                store.awaitActivity(IDLE_MILLIS, SETTLE_MILLIS, result::isDone);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new JcclException("rank " + rank + ": interrupted while connecting", e);
            }
            if (!result.isDone() && System.nanoTime() - deadline > 0) {
                result.completeExceptionally(new IllegalStateException("the transport set-up did not end within the"
                        + " connect timeout (JCCL_CONNECT_TIMEOUT_MS, " + connectTimeout.toMillis() + " ms) and "
                        + SETUP_MARGIN_MILLIS + " ms more"));
            }
            String status = RUNNING;
            String why = "-";
            if (result.isDone()) {
                try {
                    result.get();
                    status = DONE;
                } catch (ExecutionException e) {
                    status = FAILED;
                    why = describe(e.getCause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new JcclException("rank " + rank + ": interrupted while connecting", e);
                }
            }
            List<String> fields = new ArrayList<>(List.of(status, why));
            for (Map.Entry<String, byte[]> e : store.drain().entrySet()) {
                fields.add(e.getKey());
                fields.add(Base64.getEncoder().encodeToString(e.getValue()));
            }
            String[][] all = exchange(gather, identity, rank, world, fields.toArray(new String[0]));
            rounds[0]++;
            if (LOG.isDebugEnabled()) {
                List<String> keys = new ArrayList<>();
                for (int i = 2; i < fields.size(); i += 2) {
                    keys.add(fields.get(i));
                }
                LOG.debug("rank {}: round {}: {} {}", rank, rounds[0] + 1, status, keys);
            }
            if (firstRound) {
                afterFirstRound.run();
                firstRound = false;
            }
            boolean running = false;
            StringBuilder failures = new StringBuilder();
            for (int r = 0; r < world; r++) {
                String[] m = all[r];
                if (m[2].equals(FAILED)) {
                    failures.append(failures.length() == 0 ? "" : "; ").append("rank ").append(r).append(": ")
                            .append(m[3]);
                }
                running |= m[2].equals(RUNNING);
                if (r != rank) {
                    Map<String, byte[]> entries = new LinkedHashMap<>();
                    for (int i = 4; i + 1 < m.length; i += 2) {
                        entries.put(m[i], Base64.getDecoder().decode(m[i + 1]));
                    }
                    store.merge(entries);
                }
            }
            if (failures.length() > 0) {
                return failures.toString();
            }
            if (!running) {
                return null;
            }
            String wrong = result.isDone() ? null : check.get();
            if (wrong != null) { // said in the next round, as the set-up's own failure would be
                result.completeExceptionally(new IllegalStateException(wrong));
            }
        }
    }

    /** A set-up's failure for its peers: its message, or the exception itself where it has none ("null" before). */
    static String describe(Throwable failure) {
        return failure.getMessage() != null ? failure.getMessage() : failure.toString();
    }

    /** Stops a set-up that will not be used: interrupts it and closes the transport if it made one. */
    private static void abandon(Thread worker, CompletableFuture<Transport> result) {
        worker.interrupt();
        try {
            worker.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (result.isDone() && !result.isCompletedExceptionally()) {
            result.join().close();
        } else {
            // a set-up still running when the join gave up closes what it made once it returns
            result.thenAccept(Transport::close);
        }
    }

    /**
     * One round: every rank's fields, in rank order, each prefixed by identity and rank, checked: a message from
     * another world (which the barrier context never delivers) or a rank out of place fails the set-up.
     */
    static String[][] exchange(AllGather gather, String identity, int rank, int world, String... fields) {
        String[] all = gather.allGather(encode(identity, Integer.toString(rank), fields));
        if (all.length != world) {
            throw new JcclException("rank " + rank + " (" + identity + "): the barrier context gathered "
                    + all.length + " messages from a world of " + world, null);
        }
        String[][] out = new String[world][];
        for (int r = 0; r < world; r++) {
            out[r] = decode(all[r]);
            if (!out[r][0].equals(identity) || !out[r][1].equals(Integer.toString(r))) {
                throw new JcclException("rank " + rank + " (" + identity + "): message " + r + " of the round comes "
                        + "from rank " + out[r][1] + " of " + out[r][0] + ": not this world", null);
            }
        }
        return out;
    }

    private static String encode(String identity, String rank, String... fields) {
        StringBuilder sb = new StringBuilder();
        Base64.Encoder b64 = Base64.getEncoder();
        sb.append(b64.encodeToString(identity.getBytes(StandardCharsets.UTF_8))).append(' ')
                .append(b64.encodeToString(rank.getBytes(StandardCharsets.UTF_8)));
        for (String f : fields) {
            sb.append(' ').append(b64.encodeToString(f.getBytes(StandardCharsets.UTF_8)));
        }
        return sb.toString();
    }

    private static String[] decode(String message) {
        String[] parts = message.split(" ", -1);
        String[] out = new String[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = new String(Base64.getDecoder().decode(parts[i]), StandardCharsets.UTF_8);
        }
        return out;
    }

    /**
     * The secret every connection of this world proves: an HMAC of rank 0's random secret over the identity, so
     * it belongs to one stage attempt even if two attempts' ranks could reach each other's listeners.
     */
    static JobSecret derive(JobSecret random, String identity) {
        return JobSecret.fromHex(HexFormat.of().formatHex(
                random.proof("jccl-spark world", identity.getBytes(StandardCharsets.UTF_8))));
    }

    private static boolean writeProbe(Path file, String token, int rank) {
        try {
            Files.writeString(file, token);
            return true;
        } catch (java.io.IOException | RuntimeException e) {
            LOG.debug("rank {}: cannot write the co-location probe {}: {}", rank, file, e.toString());
            return false;
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (java.io.IOException e) {
            LOG.debug("cannot remove {}: {}", file, e.toString());
        }
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            return "an unnamed host";
        }
    }
}
