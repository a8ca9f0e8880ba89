package io.jccl;

import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongPredicate;

/**
 * Every setting of jccl, read once from the environment (and, for the two that have one, a system property) and
 * validated; docs/configuration.md lists them all. The entry points read it ({@link Jccl}, the rendezvous, the
 * command-line tool) and hand its values down as parameters: no class below them reads the environment.
 *
 * <p>Precedence: where a setting has a system property ({@code jccl.timeout.ms}, {@code jccl.trace}), the property
 * wins when it is set, even to an empty value, which then means the default. Otherwise a variable that is unset or
 * blank means the default. A bad value fails with an {@link IllegalArgumentException} naming the variable (or
 * property) and the value ({@code JCCL_SECRET}'s value is never shown).
 *
 * <p>The launch identity (rank, world size, master address, transport: {@code JCCL_RANK}, torchrun's {@code RANK},
 * ...) is parsed from {@link #environment()} by {@code io.jccl.rendezvous.LaunchEnvironment}, since only a job of
 * processes has one. Immutable.
 */
public final class JcclSettings {
    /** Default deadline of every collective, ms. */
    public static final String TIMEOUT_ENV = "JCCL_TIMEOUT_MS";
    /** The system property that sets the default deadline, ms; it wins over {@link #TIMEOUT_ENV}. */
    public static final String TIMEOUT_PROPERTY = "jccl.timeout.ms";
    /** As torch.distributed: 30 minutes. */
    public static final Duration TIMEOUT_DEFAULT = Duration.ofMinutes(30);
    /** Path prefix of the JSONL bandwidth trace (docs/trace.md). */
    public static final String TRACE_ENV = "JCCL_TRACE";
    /** The system property that sets the trace prefix; it wins over {@link #TRACE_ENV}. */
    public static final String TRACE_PROPERTY = "jccl.trace";
    /** Prefix of the variables that choose an operation's algorithm: {@code JCCL_ALGO_ALL_REDUCE=tree}. */
    public static final String ALGORITHM_ENV_PREFIX = "JCCL_ALGO_";
    /**
     * {@code 1}: deterministic mode, floating-point reductions summed in rank order whatever the algorithm asked
     * for ({@link CommunicatorConfig#deterministic()}).
     */
    public static final String DETERMINISTIC_ENV = "JCCL_DETERMINISTIC";
    /** How long connection set-up (store and transport) may take, ms. */
    public static final String CONNECT_TIMEOUT_ENV = "JCCL_CONNECT_TIMEOUT_MS";
    /** Connection set-up's default limit: 60 s. */
    public static final Duration CONNECT_TIMEOUT_DEFAULT = Duration.ofSeconds(60);
    /** The address TCP listeners bind. */
    public static final String BIND_ENV = "JCCL_BIND_ADDR";
    /** The address TCP peers are told to connect to. */
    public static final String ADVERTISE_ENV = "JCCL_ADVERTISE_ADDR";
    /** The largest payload a TCP peer may announce. */
    public static final String MAX_MESSAGE_ENV = "JCCL_MAX_MESSAGE_BYTES";
    /** The default largest payload: 2^31 - 1 bytes. */
    public static final long MAX_MESSAGE_DEFAULT = Integer.MAX_VALUE;
    /** The job secret, hex. */
    public static final String SECRET_ENV = "JCCL_SECRET";
    /** {@code external}: a standalone store serves the master address, rank 0 starts none. */
    public static final String STORE_ENV = "JCCL_STORE";
    /** Directory of the shared-memory segments. */
    public static final String SHM_DIR_ENV = "JCCL_SHM_DIR";
    /** Bytes per shared-memory ring. */
    public static final String SHM_RING_ENV = "JCCL_SHM_RING_BYTES";
    /** The default ring size: 4 MiB. */
    public static final int SHM_RING_DEFAULT = 4 << 20;
    /** Bytes of each of a process rank's two exchange buffers. */
    public static final String SHM_ARENA_ENV = "JCCL_SHM_ARENA_BYTES";
    /** The default exchange buffer of a process rank: 4 MiB. */
    public static final int SHM_ARENA_DEFAULT = 4 << 20;
    /** Bytes of a process rank's registered region ({@code Communicator.allocate}). */
    public static final String SHM_REGISTERED_ENV = "JCCL_SHM_REGISTERED_BYTES";
    /** The default registered region: 256 MiB (sparse: pages are used only as they are written). */
    public static final int SHM_REGISTERED_DEFAULT = 256 << 20;
    /** Bytes of each of a thread rank's two exchange buffers. */
    public static final String LOCAL_ARENA_ENV = "JCCL_LOCAL_ARENA_BYTES";
    /** The default exchange buffer of a thread rank: 4 MiB. */
    public static final int LOCAL_ARENA_DEFAULT = 4 << 20;
    /** Spins before the first yield while the ranks on a host outnumber its cores. */
    public static final String OVERSUBSCRIBED_SPINS_ENV = "JCCL_OVERSUBSCRIBED_SPINS";
    /** By default no spinning: yield at once. */
    public static final int OVERSUBSCRIBED_SPINS_DEFAULT = 0;
    /** The cost model's parameters, written by {@code jccl tune}. */
    public static final String TUNE_FILE_ENV = "JCCL_TUNE_FILE";
    /** Where each rank writes its flight record (on a failure, or when asked); unset: nowhere. */
    public static final String FLIGHT_RECORDER_DIR_ENV = "JCCL_FLIGHT_RECORDER_DIR";
    /** How many calls each rank's flight recorder keeps. */
    public static final String FLIGHT_RECORDER_ENTRIES_ENV = "JCCL_FLIGHT_RECORDER_ENTRIES";
    /** By default each flight recorder keeps the last 2,000 calls. */
    public static final int FLIGHT_RECORDER_ENTRIES_DEFAULT = 2000;
    /** What jccl logs, as NCCL_DEBUG: WARN (the default), INFO or TRACE. */
    public static final String DEBUG_ENV = "JCCL_DEBUG";
    /** Which parts log at INFO and TRACE: a comma list of INIT, COLL, NET, SHM, TUNE, or ALL (the default). */
    public static final String DEBUG_SUBSYS_ENV = "JCCL_DEBUG_SUBSYS";
    /** The Python interpreter that has torch (the command-line tool's verify and bench --compare gloo). */
    public static final String TORCH_PYTHON_ENV = "JCCL_TORCH_PYTHON";
    /** The default interpreter: Debian's. */
    public static final String TORCH_PYTHON_DEFAULT = "/usr/bin/python3";

    private final Map<String, String> environment;
    private final Duration timeout;
    private final String tracePrefix;
    private final Map<OpType, Algorithm> algorithms;
    private final boolean deterministic;
    private final Duration connectTimeout;
    private final String bindAddress;
    private final String advertiseAddress;
    private final long maxMessageBytes;
    private final String secretHex;
    private final boolean externalStore;
    private final Path shmDirectory;
    private final int shmRingBytes;
    private final int shmArenaBytes;
    private final int shmRegisteredBytes;
    private final int localArenaBytes;
    private final int oversubscribedSpins;
    private final Path tuneFile;
    private final String torchPython;
    private final Path flightRecorderDir;
    private final int flightRecorderEntries;
    private final String debugLevel;
    private final java.util.Set<String> debugSubsystems;

    private JcclSettings(Map<String, String> env, Map<String, String> properties) {
        this.environment = Collections.unmodifiableMap(new HashMap<>(env));
        this.timeout = timeout(env, properties);
        String trace = properties.containsKey(TRACE_PROPERTY) ? properties.get(TRACE_PROPERTY) : env.get(TRACE_ENV);
        this.tracePrefix = trace == null || trace.isBlank() ? null : trace;
        this.algorithms = algorithms(env);
        this.deterministic = flag(env, DETERMINISTIC_ENV);
        this.connectTimeout = bounded(Duration.ofMillis(number(env, CONNECT_TIMEOUT_ENV,
                CONNECT_TIMEOUT_DEFAULT.toMillis(), v -> v > 0, "a positive whole number of milliseconds")));
        this.bindAddress = value(env, BIND_ENV);
        this.advertiseAddress = value(env, ADVERTISE_ENV);
        this.maxMessageBytes = number(env, MAX_MESSAGE_ENV, MAX_MESSAGE_DEFAULT, v -> v > 0,
                "a positive whole number of bytes");
        this.secretHex = secret(env);
        String store = value(env, STORE_ENV);
        if (store != null && !store.equalsIgnoreCase("external")) {
            throw bad(STORE_ENV, store, "'external' or unset");
        }
        this.externalStore = store != null;
        this.shmDirectory = shmDirectory(env, properties);
        this.shmRingBytes = (int) number(env, SHM_RING_ENV, SHM_RING_DEFAULT,
                v -> v >= 4096 && v <= Integer.MAX_VALUE && Long.bitCount(v) == 1, "a power of two of at least 4096");
        this.shmArenaBytes = (int) number(env, SHM_ARENA_ENV, SHM_ARENA_DEFAULT,
                v -> v >= 4096 && v <= Integer.MAX_VALUE && v % 4096 == 0, "a multiple of 4096, at least 4096");
        this.shmRegisteredBytes = (int) number(env, SHM_REGISTERED_ENV, SHM_REGISTERED_DEFAULT,
                v -> v >= 0 && v <= Integer.MAX_VALUE && v % 4096 == 0, "a multiple of 4096 (0: none)");
        this.localArenaBytes = (int) number(env, LOCAL_ARENA_ENV, LOCAL_ARENA_DEFAULT,
                v -> v >= 4096 && v <= Integer.MAX_VALUE && v % 8 == 0, "a multiple of 8, at least 4096");
        this.oversubscribedSpins = (int) number(env, OVERSUBSCRIBED_SPINS_ENV, OVERSUBSCRIBED_SPINS_DEFAULT,
                v -> v >= 0 && v <= Integer.MAX_VALUE, "a whole number of spins, 0 or more");
        String tune = value(env, TUNE_FILE_ENV);
        this.tuneFile = tune != null ? path(TUNE_FILE_ENV, tune)
                : Path.of(properties.getOrDefault("user.home", ""), ".jccl", "tune.properties");
        String python = value(env, TORCH_PYTHON_ENV);
        this.torchPython = python != null ? python : TORCH_PYTHON_DEFAULT;
        String fr = value(env, FLIGHT_RECORDER_DIR_ENV);
        this.flightRecorderDir = fr == null ? null : path(FLIGHT_RECORDER_DIR_ENV, fr);
        this.flightRecorderEntries = (int) number(env, FLIGHT_RECORDER_ENTRIES_ENV, FLIGHT_RECORDER_ENTRIES_DEFAULT,
                v -> v >= 0 && v <= 1_000_000, "a whole number of entries from 0 to 1000000");
        String debug = value(env, DEBUG_ENV);
        this.debugLevel = debug == null ? "WARN" : debug.toUpperCase(java.util.Locale.ROOT);
        if (!java.util.List.of("WARN", "INFO", "TRACE").contains(debugLevel)) {
            throw bad(DEBUG_ENV, debug, "WARN, INFO or TRACE");
        }
        this.debugSubsystems = subsystems(value(env, DEBUG_SUBSYS_ENV));
    }

    /** The subsystems that {@code JCCL_DEBUG_SUBSYS} names (every one when unset or ALL). */
    private static java.util.Set<String> subsystems(String v) {
        java.util.List<String> all = java.util.List.of("INIT", "COLL", "NET", "SHM", "TUNE");
        if (v == null || v.equalsIgnoreCase("ALL")) {
            return java.util.Set.copyOf(all);
        }
        java.util.Set<String> out = new java.util.TreeSet<>();
        for (String part : v.split(",")) {
            String name = part.trim().toUpperCase(java.util.Locale.ROOT);
            if (!all.contains(name)) {
                throw bad(DEBUG_SUBSYS_ENV, v, "a comma list of INIT, COLL, NET, SHM, TUNE, or ALL");
            }
            out.add(name);
        }
        return java.util.Collections.unmodifiableSet(out);
    }

    /**
     * The settings of this process: its environment variables and system properties, read now. Only entry points
     * call this (EnvironmentAccessTest checks).
     *
     * @return the settings, validated
     * @throws IllegalArgumentException if a variable or property has a bad value (it is named)
     */
    public static JcclSettings fromEnvironment() {
        return fromEnvironmentIgnoring();
    }

    /**
     * As {@link #fromEnvironment()}, as if the variables {@code ignored} were unset: for an entry point that gets
     * them another way (Spark's stage gives the store and the secret), where a stray value must not fail the job.
     *
     * @param ignored names of environment variables to leave out
     * @return the settings, validated
     * @throws IllegalArgumentException if another variable or property has a bad value (it is named)
     */
    public static JcclSettings fromEnvironmentIgnoring(String... ignored) {
        Map<String, String> env = new HashMap<>(System.getenv());
        for (String name : ignored) {
            env.remove(name);
        }
        Map<String, String> properties = new HashMap<>();
        for (String name : new String[] {TIMEOUT_PROPERTY, TRACE_PROPERTY, "user.home", "java.io.tmpdir"}) {
            String v = System.getProperty(name);
            if (v != null) {
                properties.put(name, v);
            }
        }
        return new JcclSettings(env, properties);
    }

    /**
     * The settings that {@code environment} (variables) and {@code properties} (system properties; also
     * {@code user.home} and {@code java.io.tmpdir} for the defaults of the tuning file and segment directory)
     * give.
     *
     * @param environment variable names to values
     * @param properties system property names to values
     * @return the settings, validated
     * @throws IllegalArgumentException if a value is bad (the variable or property is named)
     */
    public static JcclSettings from(Map<String, String> environment, Map<String, String> properties) {
        return new JcclSettings(Objects.requireNonNull(environment, "environment"),
                Objects.requireNonNull(properties, "properties"));
    }

    /**
     * Every default (with this JVM's home and temp directories).
     *
     * @return the settings of an empty environment
     */
    public static JcclSettings defaults() {
        Map<String, String> properties = new HashMap<>();
        properties.put("user.home", System.getProperty("user.home", ""));
        properties.put("java.io.tmpdir", System.getProperty("java.io.tmpdir", ""));
        return new JcclSettings(Map.of(), properties);
    }

    /** {@return a {@link CommunicatorConfig} with these settings' timeout, trace, algorithms and deterministic mode} */
    public CommunicatorConfig communicatorConfig() {
        return CommunicatorConfig.of(this);
    }

    /** {@return the variables these settings were read from} The launch identity is parsed from them. */
    public Map<String, String> environment() {
        return environment;
    }

    /** {@return the default deadline of every call} {@code jccl.timeout.ms} or {@code JCCL_TIMEOUT_MS}; 30 minutes. */
    public Duration timeout() {
        return timeout;
    }

    /** {@return the prefix of the JSONL trace, or null (off)} {@code jccl.trace} or {@code JCCL_TRACE}. */
    public String tracePrefix() {
        return tracePrefix;
    }

    /**
     * {@code JCCL_ALGO_<OP>}: the algorithm per operation ({@code JCCL_ALGO_ALL_REDUCE}, also
     * {@code JCCL_ALGO_ALLREDUCE}); operations without one are absent (AUTO).
     *
     * @return the algorithm set per operation, unmodifiable
     */
    public Map<OpType, Algorithm> algorithms() {
        return algorithms;
    }

    /**
     * {@code JCCL_DETERMINISTIC}: whether floating-point allreduce, reduce_scatter and reduce sum in rank order
     * ({@link Algorithm#ORDERED}) whatever algorithm is asked for; off.
     *
     * @return whether deterministic mode is on
     */
    public boolean deterministic() {
        return deterministic;
    }

    /** {@return how long connecting may take, retries included} {@code JCCL_CONNECT_TIMEOUT_MS}; 60 s. */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /**
     * {@code JCCL_BIND_ADDR}: the address to listen on; by default the loopback address of {@code masterHost}'s
     * family when it is one (127.0.0.1; ::1 for {@code ::1} or {@code [::1]}), else 0.0.0.0.
     *
     * @param masterHost the host of the master address
     * @return the address to bind
     */
    public String bindAddress(String masterHost) {
        if (bindAddress != null) {
            return bindAddress;
        }
        String h = masterHost.startsWith("[") && masterHost.endsWith("]")
                ? masterHost.substring(1, masterHost.length() - 1) : masterHost;
        if (h.equals("::1") || h.equals("0:0:0:0:0:0:0:1")) {
            return "::1"; // an IPv4 listener refuses a client that dials ::1 (every rank timed out)
        }
        return h.startsWith("127.") || h.equals("localhost") ? "127.0.0.1" : "0.0.0.0";
    }

    /**
     * {@return the address peers connect to, or null to derive it from the bind address}
     * {@code JCCL_ADVERTISE_ADDR}.
     */
    public String advertiseAddress() {
        return advertiseAddress;
    }

    /** {@return the largest payload a TCP peer may announce} {@code JCCL_MAX_MESSAGE_BYTES}; 2^31 - 1. */
    public long maxMessageBytes() {
        return maxMessageBytes;
    }

    /**
     * {@code JCCL_SECRET}: the job secret as (validated) hex; "" when set but blank (an empty secret), null when
     * unset.
     *
     * @return the secret's hex digits, "" or null
     */
    public String secretHex() {
        return secretHex;
    }

    /**
     * {@return whether a standalone store serves the master address} {@code JCCL_STORE=external}: rank 0 then
     * starts none.
     */
    public boolean externalStore() {
        return externalStore;
    }

    /**
     * {@return the directory of the shared-memory segments} {@code JCCL_SHM_DIR}; /dev/shm when it exists, else
     * the temp directory.
     */
    public Path shmDirectory() {
        return shmDirectory;
    }

    /** {@return the bytes per ring, a power of two} {@code JCCL_SHM_RING_BYTES}; 4 MiB. */
    public int shmRingBytes() {
        return shmRingBytes;
    }

    /**
     * {@return the bytes of each exchange buffer of a process rank, a multiple of 4096}
     * {@code JCCL_SHM_ARENA_BYTES}; 4 MiB.
     */
    public int shmArenaBytes() {
        return shmArenaBytes;
    }

    /**
     * {@return the bytes of the registered region, a multiple of 4096} {@code JCCL_SHM_REGISTERED_BYTES}; 256 MiB
     * (sparse).
     */
    public int shmRegisteredBytes() {
        return shmRegisteredBytes;
    }

    /**
     * {@return the bytes of each exchange buffer of a thread rank, a multiple of 8} {@code JCCL_LOCAL_ARENA_BYTES};
     * 4 MiB.
     */
    public int localArenaBytes() {
        return localArenaBytes;
    }

    /**
     * {@return the spins before the first yield when ranks outnumber cores} {@code JCCL_OVERSUBSCRIBED_SPINS}; 0.
     */
    public int oversubscribedSpins() {
        return oversubscribedSpins;
    }

    /** {@return the file of the cost model's parameters} {@code JCCL_TUNE_FILE}; {@code ~/.jccl/tune.properties}. */
    public Path tuneFile() {
        return tuneFile;
    }

    /** {@return the Python interpreter that has torch} {@code JCCL_TORCH_PYTHON}; /usr/bin/python3. */
    public String torchPython() {
        return torchPython;
    }

    /**
     * {@return the directory where each rank writes its flight record, or null (nowhere)}
     * {@code JCCL_FLIGHT_RECORDER_DIR}; unset.
     */
    public Path flightRecorderDir() {
        return flightRecorderDir;
    }

    /**
     * {@return how many calls each rank's flight recorder keeps, 0 to 1,000,000}
     * {@code JCCL_FLIGHT_RECORDER_ENTRIES}; 2,000.
     */
    public int flightRecorderEntries() {
        return flightRecorderEntries;
    }

    /** {@return what jccl logs: {@code WARN}, {@code INFO} or {@code TRACE}, upper case} {@code JCCL_DEBUG}; WARN. */
    public String debugLevel() {
        return debugLevel;
    }

    /**
     * {@return the subsystems that log at INFO and TRACE, of INIT, COLL, NET, SHM and TUNE (unmodifiable)}
     * {@code JCCL_DEBUG_SUBSYS}; every one (unset or ALL).
     */
    public java.util.Set<String> debugSubsystems() {
        return debugSubsystems;
    }

    /** {@return every setting, for a log line} The secret is shown only as unset, empty or set. */
    @Override
    public String toString() {
        return "JcclSettings[timeout=" + timeout + ", trace=" + tracePrefix + ", algorithms=" + algorithms
                + ", deterministic=" + deterministic + ", connectTimeout=" + connectTimeout + ", bind=" + bindAddress
                + ", advertise=" + advertiseAddress
                + ", maxMessageBytes=" + maxMessageBytes + ", secret=" + (secretHex == null ? "unset"
                : secretHex.isEmpty() ? "empty" : "set") + ", externalStore=" + externalStore + ", shmDir="
                + shmDirectory + ", shmRingBytes=" + shmRingBytes + ", shmArenaBytes=" + shmArenaBytes
                + ", shmRegisteredBytes=" + shmRegisteredBytes + ", localArenaBytes=" + localArenaBytes
                + ", oversubscribedSpins=" + oversubscribedSpins + ", tuneFile=" + tuneFile + ", torchPython="
                + torchPython + ", flightRecorderDir=" + flightRecorderDir + ", flightRecorderEntries="
                + flightRecorderEntries + ", debug=" + debugLevel + " " + debugSubsystems + "]";
    }

    /**
     * The longest deadline a call takes, about 73 years: a longer one (a user's "forever",
     * {@code ChronoUnit.FOREVER.getDuration()}, {@code JCCL_TIMEOUT_MS=9223372036854775807}) is taken as this, so
     * that the clock arithmetic of a deadline never overflows (it threw "long overflow" after the call had taken its
     * sequence number, and every later call of the communicator waited for that one forever).
     */
    public static final Duration MAX_TIMEOUT = Duration.ofNanos(Long.MAX_VALUE / 4);

    /**
     * A deadline as calls take it.
     *
     * @param timeout a positive duration
     * @return {@code timeout}, or {@link #MAX_TIMEOUT} where it is longer
     */
    public static Duration bounded(Duration timeout) {
        return timeout.compareTo(MAX_TIMEOUT) > 0 ? MAX_TIMEOUT : timeout;
    }

    private static Duration timeout(Map<String, String> env, Map<String, String> properties) {
        boolean property = properties.containsKey(TIMEOUT_PROPERTY);
        String name = property ? TIMEOUT_PROPERTY + " (system property)" : TIMEOUT_ENV;
        String v = property ? properties.get(TIMEOUT_PROPERTY) : env.get(TIMEOUT_ENV);
        if (v == null || v.isBlank()) {
            return TIMEOUT_DEFAULT;
        }
        long ms;
        try {
            ms = Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a whole number of milliseconds, got '" + v + "'", e);
        }
        if (ms <= 0) {
            throw bad(name, v, "a positive number of milliseconds");
        }
        return bounded(Duration.ofMillis(ms));
    }

    /** {@code JCCL_ALGO_ALL_REDUCE}, else {@code JCCL_ALGO_ALLREDUCE}, for every operation. */
    private static Map<OpType, Algorithm> algorithms(Map<String, String> env) {
        Map<OpType, Algorithm> m = new EnumMap<>(OpType.class);
        for (OpType op : OpType.values()) {
            String name = ALGORITHM_ENV_PREFIX + op.name();
            String v = env.get(name);
            if (v == null) {
                name = ALGORITHM_ENV_PREFIX + op.name().replace("_", "");
                v = env.get(name);
            }
            if (v != null && !v.isBlank()) {
                Algorithm a;
                try {
                    a = Algorithm.parse(v);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(name + " must name an algorithm (" + Algorithm.available(op)
                            + "), got '" + v + "'", e);
                }
                try {
                    Algorithm.resolve(op, a); // rejects an algorithm the operation does not have
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(name + "='" + v + "': " + e.getMessage(), e);
                }
                m.put(op, a);
            }
        }
        return Collections.unmodifiableMap(m);
    }

    private static String secret(Map<String, String> env) {
        String v = env.get(SECRET_ENV);
        if (v == null) {
            return null;
        }
        String hex = v.trim();
        try {
            HexFormat.of().parseHex(hex);
        } catch (IllegalArgumentException e) {
            // neither the value nor the cause (which quotes a character of it) is shown: it is a secret
            throw new IllegalArgumentException(SECRET_ENV + " must be hexadecimal (" + hex.length()
                    + " characters given)");
        }
        return hex;
    }

    private static Path shmDirectory(Map<String, String> env, Map<String, String> properties) {
        String v = value(env, SHM_DIR_ENV);
        if (v != null) {
            return path(SHM_DIR_ENV, v);
        }
        Path shm = Path.of("/dev/shm");
        return Files.isDirectory(shm) ? shm : Path.of(properties.getOrDefault("java.io.tmpdir", ""));
    }

    /** The trimmed value of {@code name}, or null when it is unset or blank. */
    private static String value(Map<String, String> env, String name) {
        String v = env.get(name);
        return v == null || v.isBlank() ? null : v.trim();
    }

    /** {@code 1} or {@code true}: on; {@code 0} or {@code false}, unset or blank: off (case-insensitive). */
    private static boolean flag(Map<String, String> env, String name) {
        String v = value(env, name);
        if (v == null || v.equals("0") || v.equalsIgnoreCase("false")) {
            return false;
        }
        if (v.equals("1") || v.equalsIgnoreCase("true")) {
            return true;
        }
        throw bad(name, v, "1 or 0 (or true or false)");
    }

    private static long number(Map<String, String> env, String name, long dflt, LongPredicate valid, String rule) {
        String v = value(env, name);
        if (v == null) {
            return dflt;
        }
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be " + rule + ", got '" + v + "'", e);
        }
        if (!valid.test(n)) {
            throw bad(name, v, rule);
        }
        return n;
    }

    private static Path path(String name, String v) {
        try {
            return Path.of(v);
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException(name + " must be a path, got '" + v + "'", e);
        }
    }

    private static IllegalArgumentException bad(String name, String value, String rule) {
        return new IllegalArgumentException(name + " must be " + rule + ", got '" + value + "'");
    }
}
