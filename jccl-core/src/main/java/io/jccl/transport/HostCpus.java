package io.jccl.transport;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Whether the ranks of one host outnumber the cores they may run on, which decides whether a waiting rank spins
 * ({@link WaitStrategy#spinsFor(int, int, int)}). A process's own CPU count is not enough: a launcher that binds
 * each rank to a core of its own ({@code jccl launch}, {@code mpirun}, {@code numactl}, {@code taskset}) leaves
 * every rank's JVM seeing one processor, and 2 ranks would then count as 2 on 1 core and never spin, although
 * each has a core to itself (a wait then costs a {@code sched_yield} system call: 2-rank 4-byte allreduce 1.0-2.0
 * against 0.5-1.1 us spinning, docs/performance.md). So the ranks of a host publish their CPU affinity (Linux's
 * {@code Cpus_allowed_list}) and their JVM's processor count, and count the cores of the union.
 */
public final class HostCpus {
    /** CPUs a bitmap covers: 1024, as 16 longs (bit c of word c / 64). */
    public static final int MAX_CPUS = 1024;
    public static final int WORDS = MAX_CPUS / 64;

    private HostCpus() {
    }

    /** This process's CPU affinity as a bitmap of {@link #WORDS} longs; all zero when it cannot tell (not Linux). */
    public static long[] allowed() {
        return bitmap(allowedList(Path.of("/proc/self/status")));
    }

    /** The CPUs in the {@code Cpus_allowed_list} line of a {@code /proc/<pid>/status} file, or null. */
    public static int[] allowedList(Path status) {
        try {
            return parseStatus(Files.readAllLines(status));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** The {@code Cpus_allowed_list} line of a {@code status} file's lines, as CPU numbers; null if absent or odd. */
    static int[] parseStatus(List<String> lines) {
        for (String line : lines) {
            if (line.startsWith("Cpus_allowed_list:")) {
                return parseList(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        return null;
    }

    /** {@code 0-3,6} as {0, 1, 2, 3, 6}; null when malformed or empty. */
    public static int[] parseList(String list) {
        java.util.List<Integer> cpus = new java.util.ArrayList<>();
        for (String part : list.split(",")) {
            String[] range = part.trim().split("-");
            int lo;
            int hi;
            try {
                lo = Integer.parseInt(range[0].trim());
                hi = range.length == 2 ? Integer.parseInt(range[1].trim()) : lo;
            } catch (NumberFormatException e) {
                return null;
            }
            if (range.length > 2 || lo < 0 || hi < lo) {
                return null;
            }
            for (int c = lo; c <= hi; c++) {
                cpus.add(c);
            }
        }
        return cpus.isEmpty() ? null : cpus.stream().mapToInt(Integer::intValue).toArray();
    }

    /** CPU numbers as a bitmap of {@link #WORDS} longs; all zero for null or a CPU of {@link #MAX_CPUS} or more. */
    static long[] bitmap(int[] cpus) {
        long[] bits = new long[WORDS];
        if (cpus == null) {
            return bits;
        }
        for (int c : cpus) {
            if (c >= MAX_CPUS) {
                return new long[WORDS];
            }
            bits[c >> 6] |= 1L << (c & 63);
        }
        return bits;
    }

    /**
     * The cores the ranks of one host may run on: the CPUs in the union of their affinity bitmaps, but no more
     * than the largest processor count their JVMs report when some JVM reports fewer than its affinity allows (a
     * cgroup quota). {@code fallback} (this JVM's count) when some rank's affinity is unknown (all zero).
     *
     * @param allowed   by rank on the host: its affinity bitmap
     * @param available by rank on the host: {@code Runtime.availableProcessors()} of its JVM
     */
    public static int cores(long[][] allowed, int[] available, int fallback) {
        long[] union = new long[WORDS];
        boolean quota = false;
        int mostAvailable = 0;
        for (int r = 0; r < allowed.length; r++) {
            int own = 0;
            for (int w = 0; w < WORDS; w++) {
                union[w] |= allowed[r][w];
                own += Long.bitCount(allowed[r][w]);
            }
            if (own == 0 || available[r] <= 0) {
                return fallback;
            }
            quota |= available[r] < own;
            mostAvailable = Math.max(mostAvailable, available[r]);
        }
        int cores = 0;
        for (long w : union) {
            cores += Long.bitCount(w);
        }
        return quota ? Math.min(cores, mostAvailable) : cores;
    }
}
