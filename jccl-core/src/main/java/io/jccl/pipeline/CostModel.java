package io.jccl.pipeline;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Properties;

/**
 * The parameters of {@link AlgorithmSelector}'s model, per transport ({@code local}, {@code shm}, {@code tcp}):
 * {@code alpha} in microseconds per step and {@code beta} in microseconds per byte, for messages ({@code link})
 * and for the shared arena ({@code arena}). {@code jccl tune} measures them on a machine and writes them as
 * properties ({@code shm.link.alpha_us=9.5}, ...) to {@link #defaultFile()}; {@link #load()} reads that file
 * and falls back to built-in figures (measured on a 2-core host, docs/performance.md) for anything missing.
 *
 * <p>A communicator across hosts prices its two kinds of link with two keys of their own: {@value #INTER_HOST}
 * (messages between hosts) and {@value #INTRA_HOST} (messages between the ranks of one host in such a job), which
 * {@code jccl tune --hosts} measures. They are not {@code tcp} and {@code shm}, whose figures are one host's: TCP
 * over loopback with every rank on one host, and shared memory where the host runs nothing else. Priced with
 * those, a byte between hosts cost barely more than a byte within one (0.0009 against 0.0007 us/B), and AUTO chose
 * the flat ring over the hierarchical algorithms on the test bed (docs/performance.md, session 23).
 *
 * <p>Beside the parameters, measured choices ({@code jccl tune --choices}): {@code tcp.choice.ALL_REDUCE.4.1024=TREE}
 * says that on {@code tcp} with 4 ranks the allreduce of 1,024 bytes ran fastest (or within 10% of the fastest, where
 * the model's own pick was) with TREE. The model prices steps and bytes, not what a host's cores add when its ranks
 * outnumber them (a halving-doubling step's four-way exchange against a tree step's one-way messages); where it was
 * measured wrong, the measurement decides: AUTO takes the choice of the measured size nearest in log scale, for sizes
 * from a quarter of the smallest measured to four times the largest, on that transport and communicator size only
 * ({@link #choice}). Like the parameters, they are rank 0's on every rank.
 */
public final class CostModel {
    /** The parameters' name of messages between hosts, in a communicator across hosts. */
    public static final String INTER_HOST = "inter_host";
    /** The parameters' name of messages between the ranks of one host, in a communicator across hosts. */
    public static final String INTRA_HOST = "intra_host";

    /** Environment variable: the tuning file (default {@code ~/.jccl/tune.properties}). */
    public static final String FILE_ENV = "JCCL_TUNE_FILE";

    private final Properties values;

    private CostModel(Properties values) {
        this.values = values;
    }

    /** The built-in parameters only. */
    public static CostModel defaults() {
        Properties p = new Properties();
        set(p, "local", "link", 15, 0.0005);
        set(p, "shm", "link", 10, 0.0007);
        set(p, "tcp", "link", 50, 0.0009);
        // the 2 x 2 test bed, unlimited (docs/bench/tune-bed-2x2-unlimited-session14.properties): TCP through a veth
        // pair and a bridge between hosts, two shm ranks within one
        set(p, INTER_HOST, "link", 52.8, 0.00165);
        set(p, INTRA_HOST, "link", 0.55, 0.00052);
        set(p, "local", "arena", 2, 0.0002);
        set(p, "shm", "arena", 4, 0.00023);
        return new CostModel(p);
    }

    private static void set(Properties p, String transport, String kind, double alpha, double beta) {
        p.setProperty(transport + "." + kind + ".alpha_us", Double.toString(alpha));
        p.setProperty(transport + "." + kind + ".beta_us_per_byte", Double.toString(beta));
    }

    /** {@code JCCL_TUNE_FILE}, else {@code ~/.jccl/tune.properties}; a communicator takes its settings' file. */
    public static Path defaultFile() {
        return io.jccl.JcclSettings.fromEnvironment().tuneFile();
    }

    /** The defaults overridden by {@link #defaultFile()} when it exists. */
    public static CostModel load() {
        return load(defaultFile());
    }

    public static CostModel load(Path file) {
        return load(file, null);
    }

    /**
     * As {@link #load(Path)}, but a value that is not a finite number of 0 or more is left out (its built-in figure
     * stays) and told to {@code dropped}, unless that is null (then it fails as {@link #load(Path)} does): for
     * {@code jccl tune}, which rewrites the file, so that a file an older version wrote with {@code Infinity} can be
     * repaired by tuning again.
     */
    public static CostModel load(Path file, java.util.function.Consumer<String> dropped) {
        CostModel m = defaults();
        if (Files.isRegularFile(file)) {
            try (InputStream in = Files.newInputStream(file)) {
                Properties read = new Properties();
                read.load(in);
                for (String k : read.stringPropertyNames()) {
                    try {
                        check(k, read.getProperty(k)); // reject garbage early
                    } catch (NumberFormatException e) {
                        if (dropped == null) {
                            throw e;
                        }
                        dropped.accept(e.getMessage());
                        continue;
                    }
                    m.values.setProperty(k, read.getProperty(k));
                }
            } catch (IOException | NumberFormatException e) {
                throw new IllegalArgumentException("cannot read the tuning file " + file + ": " + e.getMessage(), e);
            }
        }
        return m;
    }

    /** The parameters as text (sorted {@code key=value} lines): what rank 0 gives every rank at initialisation. */
    public String toText() {
        StringBuilder sb = new StringBuilder();
        new java.util.TreeMap<>(values).forEach((k, v) -> sb.append(k).append('=').append(v).append('\n'));
        return sb.toString();
    }

    /**
     * Whether {@code given} (parameters a program gave) are {@code agreed} ({@link #toText()} of rank 0's): false
     * also where {@code given} do not parse.
     */
    public static boolean sameParameters(String given, String agreed) {
        try {
            return parse(given).toText().equals(agreed);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** The model {@link #toText()} wrote: the defaults, overridden by every line of {@code text}. */
    public static CostModel parse(String text) {
        CostModel m = defaults();
        try {
            Properties read = new Properties();
            read.load(new java.io.StringReader(text));
            for (String k : read.stringPropertyNames()) {
                check(k, read.getProperty(k));
                m.values.setProperty(k, read.getProperty(k));
            }
        } catch (IOException | NumberFormatException e) {
            throw new IllegalArgumentException("cannot read the cost-model parameters: " + e.getMessage(), e);
        }
        return m;
    }

    /**
     * {@code value} of parameter {@code key} as a number, which must be finite and not negative: an infinite or
     * NaN cost (a {@code jccl tune} that divided by zero wrote {@code Infinity} once) made every algorithm cost the
     * same, or none comparable, and AUTO's choice meaningless.
     *
     * @throws NumberFormatException naming the parameter and its value
     */
    private static double check(String key, String value) {
        if (key.contains(CHOICE)) {
            checkChoice(key, value);
            return 0;
        }
        double v;
        try {
            v = Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new NumberFormatException(key + "=" + value + " is not a number");
        }
        if (!Double.isFinite(v) || v < 0) {
            throw new NumberFormatException(key + "=" + value + " is not a finite number of 0 or more");
        }
        return v;
    }

    /** What separates a measured choice's transport from its operation, world size and bytes. */
    private static final String CHOICE = ".choice.";

    /**
     * Checks a measured choice: {@code <transport>.choice.<OPERATION>.<ranks>.<bytes>} = an algorithm AUTO may pick.
     *
     * @throws NumberFormatException naming the entry and what is wrong with it
     */
    private static void checkChoice(String key, String value) {
        String transport = key.substring(0, key.indexOf(CHOICE));
        String[] parts = key.substring(key.indexOf(CHOICE) + CHOICE.length()).split("\\.", -1);
        try {
            if (parts.length != 3 || transport.isEmpty() || !transport.equals(transport.toLowerCase(Locale.ROOT))) {
                throw new IllegalArgumentException("not <transport>.choice.<operation>.<ranks>.<bytes>, the transport "
                        + "in lower case");
            }
            io.jccl.OpType.valueOf(parts[0]);
            int ranks = Integer.parseInt(parts[1]);
            long bytes = Long.parseLong(parts[2]);
            if (ranks < 2 || bytes < 1 || !parts[1].equals(Integer.toString(ranks))
                    || !parts[2].equals(Long.toString(bytes))) {
                throw new IllegalArgumentException("ranks must be 2 or more and bytes 1 or more, in plain digits");
            }
            io.jccl.Algorithm a = io.jccl.Algorithm.valueOf(value.trim());
            if (a == io.jccl.Algorithm.AUTO || a == io.jccl.Algorithm.ORDERED) {
                throw new IllegalArgumentException(a + " is not a choice AUTO makes");
            }
        } catch (IllegalArgumentException e) { // NumberFormatException too
            throw new NumberFormatException(key + "=" + value + " is not a measured choice: " + e.getMessage());
        }
    }

    /** A copy without the measured choices of {@code transport} on {@code ranks} ranks (to be measured again). */
    public CostModel withoutChoices(String transport, int ranks) {
        String t = transport.toLowerCase(Locale.ROOT) + CHOICE;
        Properties p = new Properties();
        for (String k : values.stringPropertyNames()) {
            String[] parts = k.startsWith(t) ? k.substring(t.length()).split("\\.") : null;
            if (parts == null || parts.length != 3 || !parts[1].equals(Integer.toString(ranks))) {
                p.setProperty(k, values.getProperty(k));
            }
        }
        return new CostModel(p);
    }

    /** A copy that records {@code algorithm} as the measured choice for {@code op} of {@code bytes} on {@code ranks}. */
    public CostModel withChoice(String transport, io.jccl.OpType op, int ranks, long bytes,
                                io.jccl.Algorithm algorithm) {
        String key = transport.toLowerCase(Locale.ROOT) + CHOICE + op.name() + "." + ranks + "." + bytes;
        try {
            checkChoice(key, algorithm.name());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        Properties p = new Properties();
        p.putAll(values);
        p.setProperty(key, algorithm.name());
        return new CostModel(p);
    }

    /**
     * The measured choice for {@code op} of {@code bytes} on {@code ranks} ranks of {@code transport}: that of the
     * measured size nearest in log scale (the smaller on a tie), where {@code bytes} lies between a quarter of the
     * smallest measured size and four times the largest; null where nothing was measured for that transport,
     * operation and world size, or {@code bytes} lies outside.
     */
    public io.jccl.Algorithm choice(String transport, io.jccl.OpType op, int ranks, long bytes) {
        String prefix = transport.toLowerCase(Locale.ROOT) + CHOICE + op.name() + "." + ranks + ".";
        long nearest = -1;
        long smallest = Long.MAX_VALUE;
        long largest = 0;
        String pick = null;
        double best = Double.MAX_VALUE;
        double at = Math.log(Math.max(1, bytes));
        for (String k : values.stringPropertyNames()) {
            if (!k.startsWith(prefix)) {
                continue;
            }
            long m = Long.parseLong(k.substring(prefix.length()));
            smallest = Math.min(smallest, m);
            largest = Math.max(largest, m);
            double d = Math.abs(Math.log(m) - at);
            if (d < best - 1e-12 || (Math.abs(d - best) <= 1e-12 && m < nearest)) {
                best = d;
                nearest = m;
                pick = values.getProperty(k).trim();
            }
        }
        long above = largest > Long.MAX_VALUE / 4 ? Long.MAX_VALUE : largest * 4;
        if (pick == null || bytes < smallest / 4 || bytes > above) {
            return null;
        }
        return io.jccl.Algorithm.valueOf(pick);
    }

    /**
     * A copy with {@code transport}'s {@code kind} ("link" or "arena") parameters replaced.
     *
     * @throws IllegalArgumentException if {@code alpha} or {@code beta} is not a finite number of 0 or more
     */
    public CostModel with(String transport, String kind, double alpha, double beta) {
        try {
            check(transport + "." + kind + ".alpha_us", Double.toString(alpha));
            check(transport + "." + kind + ".beta_us_per_byte", Double.toString(beta));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("cost-model parameter " + e.getMessage(), e);
        }
        Properties p = new Properties();
        p.putAll(values);
        set(p, transport, kind, alpha, beta);
        return new CostModel(p);
    }

    /** {alpha, beta} of messages over {@code transport}. */
    public double[] link(String transport) {
        return pair(transport, "link");
    }

    /** {alpha, beta} of the shared arena of {@code transport}. */
    public double[] arena(String transport) {
        return pair(transport, "arena");
    }

    private double[] pair(String transport, String kind) {
        String t = transport.toLowerCase(Locale.ROOT);
        String a = values.getProperty(t + "." + kind + ".alpha_us");
        String b = values.getProperty(t + "." + kind + ".beta_us_per_byte");
        if (a == null || b == null) { // an unknown transport: model it as TCP
            return pair("tcp", "link");
        }
        return new double[] {Double.parseDouble(a), Double.parseDouble(b)};
    }

    public void store(Path file, String comment) throws IOException {
        if (file.getParent() != null) {
            Files.createDirectories(file.getParent());
        }
        try (OutputStream out = Files.newOutputStream(file)) {
            values.store(out, comment);
        }
    }
}
