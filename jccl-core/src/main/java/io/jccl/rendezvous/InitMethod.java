package io.jccl.rendezvous;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;

/**
 * Where the ranks of a job meet, as torch's {@code init_method} names it:
 * <ul>
 *   <li>{@code env://}: the master address and port from the environment ({@code JCCL_MASTER_ADDR} and
 *       {@code JCCL_MASTER_PORT}, or torchrun's {@code MASTER_ADDR} and {@code MASTER_PORT}); both must be set
 *       for a job of more than one rank, nothing falls back to a default address;</li>
 *   <li>{@code tcp://host:port}: rank 0 serves the store at {@code host:port}, the others connect to it;</li>
 *   <li>{@code file:///path}: a store in the directory {@code path}, which every rank can reach (a shared file
 *       system, or any directory for one host); it must be new or empty, and rank 0 empties it once every rank
 *       is connected.</li>
 * </ul>
 */
public final class InitMethod {
    /** How the store is reached. */
    public enum Kind { TCP, FILE }

    private final Kind kind;
    private final String host;
    private final int port;
    private final Path directory;
    private final String text;

    private InitMethod(Kind kind, String host, int port, Path directory, String text) {
        this.kind = kind;
        this.host = host;
        this.port = port;
        this.directory = directory;
        this.text = text;
    }

    /** A TCP store at {@code host:port}. */
    public static InitMethod tcp(String host, int port) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("init method: port must be 0 to 65535, got " + port);
        }
        return new InitMethod(Kind.TCP, host, port, null, "tcp://" + host + ":" + port);
    }

    /** A file store in {@code directory}. */
    public static InitMethod file(Path directory) {
        return new InitMethod(Kind.FILE, null, -1, directory, "file://" + directory.toAbsolutePath());
    }

    /**
     * Parses {@code url} ({@code env://}, {@code tcp://host:port} or {@code file:///path}); {@code env://} is read
     * from {@code environment}. {@code worldSize} decides whether an unset master address is an error (more than
     * one rank) or means this host and any free port (one rank: no peer needs to find it).
     */
    public static InitMethod parse(String url, Map<String, String> environment, int worldSize) {
        if (url == null || url.isBlank()) {
            throw new IllegalArgumentException("init method must be env://, tcp://host:port or file:///path, got "
                    + (url == null ? "null" : "'" + url + "'"));
        }
        String u = url.trim();
        String lower = u.toLowerCase(Locale.ROOT);
        if (lower.equals("env://") || lower.equals("env:")) {
            return fromEnvironment(environment, worldSize);
        }
        URI uri;
        try {
            uri = new URI(u);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("init method '" + u + "' is not a URL: " + e.getMessage(), e);
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        switch (scheme) {
            case "tcp": {
                String host = uri.getHost();
                int port = uri.getPort();
                String authority = uri.getRawAuthority();
                if (host == null && authority != null && authority.lastIndexOf(':') > 0) {
                    // a name java.net.URI does not take for a host (an underscore: Docker Compose's service names)
                    int colon = authority.lastIndexOf(':');
                    host = authority.substring(0, colon);
                    try {
                        port = Integer.parseInt(authority.substring(colon + 1));
                    } catch (NumberFormatException e) {
                        port = -1;
                    }
                }
                if (host == null || host.isEmpty() || port < 0 || port > 65_535) {
                    throw new IllegalArgumentException("init method '" + u + "' needs a host and a port: "
                            + "tcp://host:port");
                }
                return tcp(host, port);
            }
            case "file":
                if (uri.getRawAuthority() != null && !uri.getRawAuthority().isEmpty()
                        && !uri.getRawAuthority().equalsIgnoreCase("localhost")) { // file://localhost/x is /x
                    // file://tmp/jccl is the directory /jccl on host "tmp": almost surely meant file:///tmp/jccl
                    throw new IllegalArgumentException("init method '" + u + "' names a host ('"
                            + uri.getRawAuthority() + "'), which a file store cannot use: give the directory after "
                            + "three slashes, file:///path");
                }
                if (uri.getPath() == null || uri.getPath().isEmpty() || uri.getPath().equals("/")) {
                    throw new IllegalArgumentException("init method '" + u + "' needs a directory: file:///path");
                }
                return file(Path.of(uri.getPath()));
            default:
                throw new IllegalArgumentException("init method '" + u + "' has an unknown scheme: use env://, "
                        + "tcp://host:port or file:///path");
        }
    }

    /** {@code env://}: the master from {@code JCCL_MASTER_ADDR}/{@code MASTER_ADDR} and the port beside it. */
    static InitMethod fromEnvironment(Map<String, String> env, int worldSize) {
        String[] addr = LaunchEnvironment.first(env, "JCCL_MASTER_ADDR", "MASTER_ADDR");
        String[] port = LaunchEnvironment.first(env, "JCCL_MASTER_PORT", "MASTER_PORT");
        if (addr == null && port == null && worldSize == 1) {
            return tcp("127.0.0.1", 0); // one rank: it serves its own store on any free port
        }
        if (addr == null || port == null) {
            throw new IllegalStateException("env:// needs the master's address and port: "
                    + (addr == null ? "JCCL_MASTER_ADDR (or MASTER_ADDR) is not set" : "")
                    + (addr == null && port == null ? " and " : "")
                    + (port == null ? "JCCL_MASTER_PORT (or MASTER_PORT) is not set" : "")
                    + "; jccl launch, torchrun and the test bed set them, or pass tcp://host:port");
        }
        return tcp(addr[1], LaunchEnvironment.parse(port));
    }

    public Kind kind() {
        return kind;
    }

    /** The store's host ({@link Kind#TCP}), or null. */
    public String host() {
        return host;
    }

    /** The store's port ({@link Kind#TCP}; 0: any free one, for a job of one rank), or -1. */
    public int port() {
        return port;
    }

    /** The store's directory ({@link Kind#FILE}), or null. */
    public Path directory() {
        return directory;
    }

    @Override
    public String toString() {
        return text;
    }
}
