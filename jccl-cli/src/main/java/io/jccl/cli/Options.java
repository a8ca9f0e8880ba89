package io.jccl.cli;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * What the commands share to check their options before any work starts: a wrong value is a
 * {@link ParameterException}, which picocli prints as one line and the usage, with exit status 2.
 */
final class Options {
    private Options() {
    }

    /** The transports of verify, bench, train and tune, in the order the help lists them. */
    static final List<String> TRANSPORTS = List.of("threads", "shm", "tcp");

    /**
     * {@code --transport} of the commands that run ranks as threads or as processes: threads (alias local, the
     * name of the in-process queue mesh), shm or tcp.
     */
    static final class Transport implements CommandLine.ITypeConverter<String> {
        @Override
        public String convert(String value) {
            String t = value.trim().toLowerCase(Locale.ROOT);
            if (t.equals("local")) {
                return "threads";
            }
            if (!TRANSPORTS.contains(t)) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a transport: threads, shm or tcp");
            }
            return t;
        }
    }

    /** {@code jccl launch --transport}: what the ranks' JCCL_TRANSPORT may be (auto, shm or tcp). */
    static final class LaunchTransport implements CommandLine.ITypeConverter<String> {
        @Override
        public String convert(String value) {
            String t = value.trim().toLowerCase(Locale.ROOT);
            if (!List.of("auto", "shm", "tcp").contains(t)) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a transport of processes: "
                        + "auto, shm or tcp");
            }
            return t;
        }
    }

    /** {@code jccl launch --cpu-bind}: core or none. */
    static final class CpuBind implements CommandLine.ITypeConverter<io.jccl.launch.Launcher.CpuBinding> {
        @Override
        public io.jccl.launch.Launcher.CpuBinding convert(String value) {
            String t = value.trim().toLowerCase(Locale.ROOT);
            if (t.equals("core")) {
                return io.jccl.launch.Launcher.CpuBinding.CORE;
            }
            if (t.equals("none")) {
                return io.jccl.launch.Launcher.CpuBinding.NONE;
            }
            throw new CommandLine.TypeConversionException("'" + value + "' is not a CPU binding: core or none");
        }
    }

    /** A size in bytes with an optional K, M or G suffix (powers of 1024), at least 1. */
    static final class Size implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            String t = value.trim().toUpperCase(Locale.ROOT);
            long mult = 1;
            if (t.endsWith("K")) {
                mult = 1L << 10;
            } else if (t.endsWith("M")) {
                mult = 1L << 20;
            } else if (t.endsWith("G")) {
                mult = 1L << 30;
            }
            if (mult > 1) {
                t = t.substring(0, t.length() - 1);
            }
            long n;
            try {
                n = Long.parseLong(t);
            } catch (NumberFormatException e) {
                n = -1;
            }
            if (n < 1 || n > Long.MAX_VALUE / mult) {
                throw new CommandLine.TypeConversionException("'" + value + "' is not a size: a positive number of "
                        + "bytes, optionally with K, M or G (e.g. 4, 64K, 16M)");
            }
            return n * mult;
        }
    }

    /**
     * {@code --hosts} of bench, verify and tune: 1 (no bed) up to the test bed's {@link io.jccl.launch.Bed#MAX_HOSTS};
     * more failed only once the bed was being built (as root; else on the need for root).
     */
    static void hosts(CommandSpec spec, int hosts) {
        atLeast(spec, "--hosts", hosts, 1);
        if (hosts > io.jccl.launch.Bed.MAX_HOSTS) {
            throw new ParameterException(spec.commandLine(), "Invalid value for option '--hosts': " + hosts
                    + " (the test bed has at most " + io.jccl.launch.Bed.MAX_HOSTS + " hosts)");
        }
    }

    /** {@code value} of {@code option}, at least {@code min}. */
    static void atLeast(CommandSpec spec, String option, long value, long min) {
        if (value < min) {
            throw new ParameterException(spec.commandLine(), "Invalid value for option '" + option + "': " + value
                    + " (it must be at least " + min + ")");
        }
    }

    /** A value {@code parse} accepts; its {@link IllegalArgumentException} becomes a usage error of {@code option}. */
    static <T> T parse(CommandSpec spec, String option, String value, Function<String, T> parse) {
        return parse(spec, option, value, parse, null);
    }

    /** As above; {@code expected} (unless null) lists the values {@code option} takes, for the message. */
    static <T> T parse(CommandSpec spec, String option, String value, Function<String, T> parse, String expected) {
        try {
            return parse.apply(value);
        } catch (IllegalArgumentException e) {
            // Enum.valueOf's message names a Java class: the list of values says more
            String why = expected != null ? "expected one of " + expected
                    : e.getMessage() == null || e.getMessage().startsWith("No enum constant") ? null : e.getMessage();
            throw new ParameterException(spec.commandLine(), "Invalid value for option '" + option + "': '" + value
                    + "'" + (why == null ? "" : " (" + why + ")"));
        }
    }

    /** The names of {@code values} as the command line spells them: lower case, comma-separated. */
    static String names(Enum<?>[] values) {
        StringBuilder sb = new StringBuilder();
        for (Enum<?> v : values) {
            sb.append(sb.length() == 0 ? "" : ", ").append(v.name().toLowerCase(Locale.ROOT));
        }
        return sb.toString();
    }

    /** Every value of a list option, parsed as {@link #parse} does; null stays null. */
    static <T> List<T> parseAll(CommandSpec spec, String option, List<String> values, Function<String, T> parse) {
        if (values == null) {
            return null;
        }
        return parseAll(spec, option, values, parse, null);
    }

    /** As above, with the list of the values {@code option} takes. */
    static <T> List<T> parseAll(CommandSpec spec, String option, List<String> values, Function<String, T> parse,
                                String expected) {
        if (values == null) {
            return null;
        }
        List<T> out = new ArrayList<>();
        for (String v : values) {
            out.add(parse(spec, option, v, parse, expected));
        }
        return out;
    }

    /**
     * A usage error of {@code option} when a value of {@code parsed} (its values as parsed: {@code 1K} and
     * {@code 1024} are one size, {@code allreduce} and {@code all_reduce} one operation) is given more than once, which
     * ran it twice and kept one row of the two; {@code name} says a value as the error names it.
     */
    static <T> void once(CommandSpec spec, String option, List<T> parsed, Function<T, String> name) {
        if (parsed == null) {
            return;
        }
        java.util.Set<T> seen = new java.util.HashSet<>();
        for (T v : parsed) {
            if (!seen.add(v)) {
                throw usage(spec, "Invalid value for option '" + option + "': " + name.apply(v)
                        + " is given more than once");
            }
        }
    }

    /**
     * Why {@code algorithm} cannot run {@code op} on the ranks a command is about to run, or null when it can, or
     * when {@code op} has no such algorithm (bench then has no rows of it; verify asks about the default it runs
     * instead). Deterministic mode first ({@link #overridden}: what runs would be ORDERED under another name); then
     * the algorithm's own rule ({@code CollectiveAlgorithm.unsupported}, which refuses the call at run time), asked
     * of the topology those ranks will have: ranks as threads and shm ranks share an arena, tcp ranks do not; on the
     * test bed ({@code hosts} above 1) there are {@code ranksPerHost} ranks per host over shm+tcp, and no arena that
     * spans the hosts. {@code floating}: whether the calls include a floating-point type; {@code deterministic}:
     * the ranks' {@code JCCL_DETERMINISTIC}.
     */
    static String unsupported(io.jccl.OpType op, io.jccl.Algorithm algorithm, boolean floating, boolean deterministic,
                              String transport, int world, int hosts, int ranksPerHost) {
        io.jccl.algorithm.CollectiveAlgorithm a = io.jccl.algorithm.AlgorithmRegistry.standard().find(op, algorithm);
        if (a == null) {
            return null;
        }
        String overridden = overridden(op, algorithm, floating, deterministic);
        if (overridden != null) {
            return overridden + "; ask for ordered or auto, or unset " + io.jccl.JcclSettings.DETERMINISTIC_ENV;
        }
        io.jccl.algorithm.Topology topology;
        if (hosts > 1) {
            int[] hostOf = new int[hosts * ranksPerHost];
            for (int r = 0; r < hostOf.length; r++) {
                hostOf[r] = r / ranksPerHost;
            }
            topology = new io.jccl.algorithm.Topology(hostOf.length, ranksPerHost > 1 ? "shm+tcp" : "tcp", false,
                    false, 0, hostOf, null);
        } else {
            boolean arena = !transport.equals("tcp");
            topology = new io.jccl.algorithm.Topology(world, transport.equals("threads") ? "local" : transport, false,
                    arena, arena ? 4096 : 0);
        }
        String why = a.unsupported(topology);
        if (why == null) {
            return null;
        }
        if (algorithm == io.jccl.Algorithm.SHARED_MEMORY) {
            why += "; it runs with --transport threads or shm, without --hosts";
        } else if (algorithm == io.jccl.Algorithm.HIERARCHICAL && (hosts < 2 || ranksPerHost < 2)) {
            why += "; it runs on the test bed: --hosts 2 or more with --ranks-per-host 2 or more";
        }
        return why;
    }

    /**
     * Why {@code op} asked to run {@code algorithm} would run ORDERED instead, or null when it runs
     * {@code algorithm}: deterministic mode ({@code deterministic}, the ranks' {@code JCCL_DETERMINISTIC}) runs every
     * floating-point call ({@code floating}: the calls include a floating-point type) of an operation that has
     * {@link io.jccl.Algorithm#ORDERED} as ORDERED, whatever algorithm is asked for
     * ({@code CommunicatorConfig.withDeterministic}). The library overrides it without a word; the commands, which
     * measure or check the algorithm they are given, would report ORDERED under its name.
     */
    static String overridden(io.jccl.OpType op, io.jccl.Algorithm algorithm, boolean floating, boolean deterministic) {
        if (!deterministic || !floating || algorithm == io.jccl.Algorithm.AUTO || algorithm == io.jccl.Algorithm.ORDERED
                || io.jccl.algorithm.AlgorithmRegistry.standard().find(op, io.jccl.Algorithm.ORDERED) == null) {
            return null;
        }
        return io.jccl.JcclSettings.DETERMINISTIC_ENV + "=1 runs its floating-point calls as ORDERED (summed in rank "
                + "order), not " + algorithm;
    }

    /**
     * A usage error of {@code option} when {@code algorithm} ({@code given} on the command line) cannot run
     * {@code op} (named {@code opName}) there: see {@link #unsupported}.
     */
    static void runnable(CommandSpec spec, String option, String given, io.jccl.OpType op, String opName,
                         io.jccl.Algorithm algorithm, boolean floating, boolean deterministic, String transport,
                         int world, int hosts, int ranksPerHost) {
        String why = unsupported(op, algorithm, floating, deterministic, transport, world, hosts, ranksPerHost);
        if (why != null) {
            throw new ParameterException(spec.commandLine(), "Invalid value for option '" + option + "': '" + given
                    + "' cannot run " + opName + " here: " + why);
        }
    }

    /**
     * A usage error of {@code option} when a buffer of {@code bytes} for {@code op} on {@code world} ranks has more
     * float32 elements than a Java array holds ({@link io.jccl.bench.Bench#MAX_COUNT}).
     */
    static void fits(CommandSpec spec, String option, long bytes, io.jccl.OpType op, int world) {
        long count = io.jccl.bench.Bench.elements(op, bytes, world);
        if (count > io.jccl.bench.Bench.MAX_COUNT) {
            throw new ParameterException(spec.commandLine(), "Invalid value for option '" + option + "': " + bytes
                    + " bytes are " + count + " float32 elements, more than a Java array holds (" + io.jccl.bench.Bench
                    .MAX_COUNT + ", " + 4 * io.jccl.bench.Bench.MAX_COUNT + " bytes)");
        }
    }

    /**
     * As {@link #fits}, and a usage error when the rows' arrays (three per rank, {@link io.jccl.bench.Bench#arrayBytes})
     * would not fit in memory: ranks as threads ({@code threads}) in this JVM's heap, ranks as processes
     * ({@code ranksHere} of them on this machine: the test bed's hosts are all on it) in its memory. A process's
     * heap limit ({@link io.jccl.bench.Bench#heapMiB}, at least 1 GiB) is a ceiling, not what it uses.
     */
    static void fits(CommandSpec spec, String option, long bytes, io.jccl.OpType op, int world, boolean threads,
                     int ranksHere) {
        fits(spec, option, bytes, op, world);
        long count = io.jccl.bench.Bench.elements(op, bytes, world);
        long mib = 1 << 20;
        long perRank = io.jccl.bench.Bench.arrayBytes(count);
        if (threads) {
            long need = perRank * world;
            long have = Runtime.getRuntime().maxMemory();
            if (need > have) {
                throw new ParameterException(spec.commandLine(), "Invalid value for option '" + option + "': "
                        + bytes + " bytes need about " + need / mib + " MiB of this JVM's heap for " + world
                        + " ranks as threads, which has " + have / mib + " MiB (a larger -Xmx, or ranks as processes: "
                        + "--transport shm)");
            }
            return;
        }
        long memory = totalMemory();
        if (memory > 0 && perRank * ranksHere > memory) {
            throw new ParameterException(spec.commandLine(), "Invalid value for option '" + option + "': " + bytes
                    + " bytes need about " + perRank / mib + " MiB for each of the " + ranksHere
                    + " rank processes on this machine, more than its " + memory / mib + " MiB of memory");
        }
    }

    /** This host's physical memory in bytes, or 0 when the JVM does not say. */
    private static long totalMemory() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory
                .getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean
                ? ((com.sun.management.OperatingSystemMXBean) os).getTotalMemorySize() : 0;
    }

    /**
     * A usage error of {@code option} when {@code file} cannot be written where it is asked, found before any work
     * starts: bench made the directories of its --json and --plot files, and wrote them, after every row had been
     * measured, so a directory it could not make failed the run and lost the table. With {@code makeDirectory} the
     * missing directories of {@code file} are made now (bench and tune make them), else its directory must exist.
     * {@code option} is an option ({@code --json}) or the variable that gave the file ({@code JCCL_TUNE_FILE}).
     *
     * <p>Returns the directories it made, outermost first (empty when there were none to make), so that a run that
     * fails later can remove them ({@link #removeMade}); a usage error here removes those it made itself first (a
     * path whose deeper part cannot be made had its upper part made already).
     */
    static List<java.nio.file.Path> output(CommandSpec spec, String option, java.io.File file,
                                           boolean makeDirectory) {
        java.io.File path = file.getAbsoluteFile();
        java.io.File dir = path.getParentFile();
        String invalid = option.startsWith("-") ? "Invalid value for option '" + option + "': "
                : "Invalid value of " + option + ": ";
        List<java.nio.file.Path> made = dir != null && makeDirectory ? missing(dir.toPath()) : List.of();
        try {
            if (dir != null && makeDirectory) {
                try {
                    java.nio.file.Files.createDirectories(dir.toPath());
                } catch (java.io.IOException | SecurityException e) {
                    throw new ParameterException(spec.commandLine(), invalid + "cannot make the directory " + dir
                            + " (" + why(e) + ")");
                }
            } else if (dir == null || !dir.isDirectory()) {
                throw new ParameterException(spec.commandLine(), invalid + "the directory " + dir + " does not exist");
            }
            if (path.isDirectory()) {
                throw new ParameterException(spec.commandLine(), invalid + path + " is a directory");
            }
            if (!java.nio.file.Files.isWritable(path.exists() ? path.toPath() : dir.toPath())) {
                throw new ParameterException(spec.commandLine(), invalid + "cannot write " + path
                        + " (permission denied)");
            }
        } catch (ParameterException e) {
            removeMade(made);
            throw e;
        }
        return made;
    }

    /**
     * {@code dir} and the directories above it that do not exist, outermost first: those {@link #output} is about to
     * make. A name taken by anything, even a link to nowhere, is not among them.
     */
    private static List<java.nio.file.Path> missing(java.nio.file.Path dir) {
        List<java.nio.file.Path> missing = new ArrayList<>();
        for (java.nio.file.Path d = dir; d != null
                && java.nio.file.Files.notExists(d, java.nio.file.LinkOption.NOFOLLOW_LINKS); d = d.getParent()) {
            missing.add(0, d);
        }
        return missing;
    }

    /**
     * Removes the directories {@code made} (what {@link #output} returned, in the order its calls made them) that are
     * still empty, the last made first: a run that failed leaves none of its own behind. One that holds anything, a
     * file written there or put there meanwhile, stays, with those above it; nothing else is touched.
     */
    static void removeMade(List<java.nio.file.Path> made) {
        for (int i = made.size() - 1; i >= 0; i--) {
            java.nio.file.Path d = made.get(i);
            try {
                if (java.nio.file.Files.isDirectory(d, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    java.nio.file.Files.delete(d); // only an empty directory: anything in it makes this fail
                }
            } catch (java.io.IOException | SecurityException e) {
                // not empty, or not ours to remove any more: it stays
            }
        }
    }

    /** Why a file operation failed, in a few words: the JDK's messages name the file, or only the file. */
    private static String why(Exception e) {
        if (e instanceof java.nio.file.FileAlreadyExistsException) {
            return ((java.nio.file.FileAlreadyExistsException) e).getFile() + " is not a directory";
        }
        if (e instanceof java.nio.file.AccessDeniedException) {
            return "permission denied: " + ((java.nio.file.AccessDeniedException) e).getFile();
        }
        if (e instanceof java.nio.file.FileSystemException) {
            java.nio.file.FileSystemException f = (java.nio.file.FileSystemException) e;
            return f.getFile() + ": " + (f.getReason() != null ? f.getReason() : e.getClass().getSimpleName());
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    /** A usage error of {@code spec}'s command that no single option value explains. */
    static ParameterException usage(CommandSpec spec, String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
