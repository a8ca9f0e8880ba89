package io.jccl.rendezvous;

import io.jccl.store.TcpStore;
import io.jccl.store.TcpStoreServer;
import io.jccl.store.PrefixStore;

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
     * shm when every rank is on this host (same host name and boot id) and {@code kind} is auto or shm; tcp
     * otherwise. The choice is the same on every rank, since every rank reads every rank's host identity.
     */
    static Transport connectTransport(LaunchEnvironment env, Store store, TcpOptions tcp, String kind,
                                      JcclSettings settings) {
        Duration timeout = tcp.connectTimeout();
        store.setString("host/" + env.rank(), hostIdentity());
        boolean oneHost = true;
        String mine = hostIdentity();
        for (int r = 0; r < env.worldSize(); r++) {
            oneHost &= store.getString("host/" + r, timeout).equals(mine);
        }
        if (kind.equals("shm") && !oneHost) {
            throw new IllegalArgumentException("JCCL_TRANSPORT=shm but the ranks are on more than one host");
        }
        if (oneHost && !kind.equals("tcp")) {
            return ShmTransport.connect(env.rank(), env.worldSize(), store, settings.shmDirectory(),
                    settings.shmRingBytes(), settings.shmArenaBytes(), settings.shmRegisteredBytes(),
                    settings.oversubscribedSpins(), timeout);
        }
        return TcpTransport.connect(env.rank(), env.worldSize(), store, tcp);
    }

    /** Host name and kernel boot id: equal for processes that can share memory. */
    static String hostIdentity() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            host = "unknown";
        }
        String boot = "";
        try {
            boot = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (java.io.IOException | RuntimeException e) {
            // not Linux: the host name alone
        }
        return host + "/" + boot;
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
        long index = store.add("join/count", 1) - 1;
        store.setString("join/" + index, rank + " " + worldSize + " " + ProcessHandle.current().pid() + " "
                + hostName());
        long deadline = System.nanoTime() + timeout.toNanos();
        java.util.TreeMap<Integer, String> joined = new java.util.TreeMap<>();
        long read = 0;
        long pause = 1;
        String failure = null;
        while (failure == null) {
            if (store.check("join/failed")) {
                failure = store.getString("join/failed", timeout);
                break;
            }
            long count = store.add("join/count", 0);
            for (; read < count && failure == null; read++) {
                String[] v = store.getString("join/" + read, timeout).split(" ", 4);
                int r = Integer.parseInt(v[0]);
                int w = Integer.parseInt(v[1]);
                String who = "rank " + r + " (pid " + v[2] + " on " + v[3] + ")";
                if (w != worldSize) {
                    failure = "rank " + r + " says world size " + w + ", rank " + rank + " says " + worldSize
                            + ": every rank must be started with the same world size";
                } else if (joined.containsKey(r)) {
                    failure = "rank " + r + " joined twice: " + joined.get(r) + " and " + who
                            + "; every rank number must be given to exactly one process";
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
                failure = (missing.size() == 1 ? "rank " + missing.get(0) + " never joined"
                        : "ranks " + missing + " never joined") + " within " + timeout.toMillis() + " ms; joined: "
                        + (joined.isEmpty() ? "none" : String.join(", ", joined.values()));
            }
            if (failure != null) {
                store.setString("join/failed", failure);
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

    /**
     * Connects rank {@code env.rank()} to the others: the secret, the TCP and shared-memory settings and
     * {@code JCCL_STORE} come from {@code config}'s {@link CommunicatorConfig#settings()}.
     */
    public static Communicator connect(LaunchEnvironment env, CommunicatorConfig config) {
        JcclSettings settings = config.settings();
        JobSecret secret = JobSecret.from(settings);
        if (secret.isEmpty()) {
            LOG.warn("rank {}: {} is not set: peers are not authenticated (jccl launch sets it)", env.rank(),
                    JobSecret.ENV);
        }
        TcpOptions tcp = TcpOptions.from(settings, env.masterAddr());
        String kind = env.transport();
        if (!kind.equals("auto") && !kind.equals("tcp") && !kind.equals("shm")) {
            throw new IllegalArgumentException("JCCL_TRANSPORT must be auto, shm or tcp, got '" + kind + "'");
        }
        Duration timeout = tcp.connectTimeout();
        boolean external = settings.externalStore();
        TcpStoreServer server = env.rank() == 0 && !external
                ? TcpStoreServer.start(tcp.bindHost(), env.masterPort(), secret) : null;
        Transport transport = null;
        try (TcpStore client = TcpStore.connect(env.masterAddr(), env.masterPort(), secret, timeout)) {
            Store store = new PrefixStore("jccl", client);
            join(env.rank(), env.worldSize(), store, timeout);
            transport = connectTransport(env, store, tcp, kind, settings);
            DefaultCommunicator comm = new DefaultCommunicator(transport, config);
            comm.barrier(); // every rank is connected: the store is no longer needed
            return comm;
        } catch (RuntimeException e) {
            if (transport != null) {
                transport.close();
            }
            throw e;
        } finally {
            if (server != null) {
                server.close();
            }
        }
    }
}
