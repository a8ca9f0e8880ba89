package io.jccl.transport.tcp;

import io.jccl.security.JobSecret;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of the TCP transport. Each has an environment variable and a default.
 * <ul>
 *   <li>{@code JCCL_BIND_ADDR}: interface address to listen on; default 127.0.0.1 when the master address is a
 *   loopback address, 0.0.0.0 otherwise.</li>
 *   <li>{@code JCCL_ADVERTISE_ADDR}: address peers connect to; default the bind address, or this host's address
 *   when binding every interface.</li>
 *   <li>{@code JCCL_CONNECT_TIMEOUT_MS}: how long connection set-up may take, retries included; default 60 s.</li>
 *   <li>{@code JCCL_MAX_MESSAGE_BYTES}: the largest payload a peer may announce; default 2^31 - 1.</li>
 * </ul>
 */
public final class TcpOptions {
    public static final String BIND_ENV = "JCCL_BIND_ADDR";
    public static final String ADVERTISE_ENV = "JCCL_ADVERTISE_ADDR";
    public static final String CONNECT_TIMEOUT_ENV = "JCCL_CONNECT_TIMEOUT_MS";
    public static final String MAX_MESSAGE_ENV = "JCCL_MAX_MESSAGE_BYTES";
    public static final Duration CONNECT_TIMEOUT_DEFAULT = Duration.ofSeconds(60);
    public static final long MAX_MESSAGE_DEFAULT = Integer.MAX_VALUE;

    private final String bindHost;
    private final String advertiseHost;
    private final JobSecret secret;
    private final Duration connectTimeout;
    private final long maxMessageBytes;

    public TcpOptions(String bindHost, String advertiseHost, JobSecret secret, Duration connectTimeout,
                      long maxMessageBytes) {
        this.bindHost = Objects.requireNonNull(bindHost, "bindHost");
        this.advertiseHost = advertiseHost;
        this.secret = Objects.requireNonNull(secret, "secret");
        this.connectTimeout = Objects.requireNonNull(connectTimeout, "connectTimeout");
        if (maxMessageBytes <= 0) {
            throw new IllegalArgumentException("maxMessageBytes must be positive: maxMessageBytes=" + maxMessageBytes);
        }
        this.maxMessageBytes = maxMessageBytes;
    }

    /** Loopback, no secret: for ranks that are threads of one JVM (tests). */
    public static TcpOptions loopback(JobSecret secret) {
        return new TcpOptions("127.0.0.1", "127.0.0.1", secret, CONNECT_TIMEOUT_DEFAULT, MAX_MESSAGE_DEFAULT);
    }

    /** From the environment, for a job whose store is at {@code masterHost}. */
    public static TcpOptions fromEnvironment(String masterHost) {
        return from(io.jccl.JcclSettings.fromEnvironment(), masterHost);
    }

    /** From {@code settings}, for a job whose store is at {@code masterHost}. */
    public static TcpOptions from(io.jccl.JcclSettings settings, String masterHost) {
        return new TcpOptions(settings.bindAddress(masterHost), settings.advertiseAddress(), JobSecret.from(settings),
                settings.connectTimeout(), settings.maxMessageBytes());
    }

    public String bindHost() {
        return bindHost;
    }

    /** The address peers should connect to, or null to derive it from the bind address. */
    public String advertiseHost() {
        return advertiseHost;
    }

    public JobSecret secret() {
        return secret;
    }

    public Duration connectTimeout() {
        return connectTimeout;
    }

    public long maxMessageBytes() {
        return maxMessageBytes;
    }

    /** These options with {@code newSecret} authenticating the peers. */
    public TcpOptions withSecret(JobSecret newSecret) {
        return new TcpOptions(bindHost, advertiseHost, newSecret, connectTimeout, maxMessageBytes);
    }

    /** These options with {@code timeout} for connecting, retries included. */
    public TcpOptions withConnectTimeout(Duration timeout) {
        return new TcpOptions(bindHost, advertiseHost, secret, timeout, maxMessageBytes);
    }

    /** These options with {@code host} as the address given to peers. */
    public TcpOptions withAdvertiseHost(String host) {
        return new TcpOptions(bindHost, host, secret, connectTimeout, maxMessageBytes);
    }
}
