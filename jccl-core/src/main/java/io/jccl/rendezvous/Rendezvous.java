package io.jccl.rendezvous;

import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.core.DefaultCommunicator;
import io.jccl.security.JobSecret;
import io.jccl.transport.Transport;
import io.jccl.transport.tcp.TcpOptions;
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

    private Rendezvous() {
    }

    public static Communicator connect(LaunchEnvironment env, CommunicatorConfig config) {
        JobSecret secret = JobSecret.fromEnvironment();
        if (secret.isEmpty()) {
            LOG.warn("rank {}: {} is not set: peers are not authenticated (jccl launch sets it)", env.rank(),
                    JobSecret.ENV);
        }
        TcpOptions tcp = TcpOptions.fromEnvironment(env.masterAddr());
        if (!env.transport().equals("auto") && !env.transport().equals("tcp")) {
            throw new IllegalArgumentException("JCCL_TRANSPORT=" + env.transport() + " is not available in this "
                    + "build; use auto or tcp");
        }
        Duration timeout = tcp.connectTimeout();
        TcpStoreServer server = env.rank() == 0
                ? TcpStoreServer.start(tcp.bindHost(), env.masterPort(), secret) : null;
        Transport transport = null;
        try (TcpStore client = TcpStore.connect(env.masterAddr(), env.masterPort(), secret, timeout)) {
            Store store = new PrefixStore("jccl", client);
            transport = TcpTransport.connect(env.rank(), env.worldSize(), store, tcp);
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
