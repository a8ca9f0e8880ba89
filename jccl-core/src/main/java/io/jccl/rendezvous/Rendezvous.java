package io.jccl.rendezvous;

import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.core.DefaultCommunicator;
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
     * master address, so rank 0 does not start one.
     */
    public static final String STORE_ENV = "JCCL_STORE";

    private Rendezvous() {
    }

    /**
     * shm when every rank is on this host (same host name and boot id) and {@code kind} is auto or shm; tcp
     * otherwise. The choice is the same on every rank, since every rank reads every rank's host identity.
     */
    static Transport connectTransport(LaunchEnvironment env, Store store, TcpOptions tcp, String kind) {
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
            String ring = System.getenv(ShmTransport.RING_ENV);
            String arena = System.getenv(ShmTransport.ARENA_ENV);
            String registered = System.getenv(ShmTransport.REGISTERED_ENV);
            return ShmTransport.connect(env.rank(), env.worldSize(), store, ShmTransport.defaultDirectory(),
                    ring == null ? ShmTransport.RING_DEFAULT : Integer.parseInt(ring.trim()),
                    arena == null ? ShmTransport.ARENA_DEFAULT : Integer.parseInt(arena.trim()),
                    registered == null ? ShmTransport.REGISTERED_DEFAULT : Integer.parseInt(registered.trim()),
                    timeout);
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

    public static Communicator connect(LaunchEnvironment env, CommunicatorConfig config) {
        JobSecret secret = JobSecret.fromEnvironment();
        if (secret.isEmpty()) {
            LOG.warn("rank {}: {} is not set: peers are not authenticated (jccl launch sets it)", env.rank(),
                    JobSecret.ENV);
        }
        TcpOptions tcp = TcpOptions.fromEnvironment(env.masterAddr());
        String kind = env.transport();
        if (!kind.equals("auto") && !kind.equals("tcp") && !kind.equals("shm")) {
            throw new IllegalArgumentException("JCCL_TRANSPORT must be auto, shm or tcp, got '" + kind + "'");
        }
        Duration timeout = tcp.connectTimeout();
        boolean external = "external".equalsIgnoreCase(System.getenv(STORE_ENV));
        TcpStoreServer server = env.rank() == 0 && !external
                ? TcpStoreServer.start(tcp.bindHost(), env.masterPort(), secret) : null;
        Transport transport = null;
        try (TcpStore client = TcpStore.connect(env.masterAddr(), env.masterPort(), secret, timeout)) {
            Store store = new PrefixStore("jccl", client);
            transport = connectTransport(env, store, tcp, kind);
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
