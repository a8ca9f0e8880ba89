package io.jccl.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The CPU time of this process, for the benchmark's cpu column: two clocks, each read before a row's timed calls and
 * after them ({@link #start}, {@link #since}).
 * <ul>
 *   <li>{@code OperatingSystemMXBean.getProcessCpuTime} counts in the kernel's clock ticks (10 ms: JDK 17 calls
 *       {@code times()}) but keeps the time of threads that ended; a row of small calls read 0 or a whole tick.</li>
 *   <li>On Linux the scheduler keeps every thread's time on the CPU in nanoseconds ({@code
 *       /proc/self/task/<tid>/schedstat}, first field), summed here over the threads alive at the reading, after the
 *       Java threads' CPU clocks are read (which brings a running thread's count up to date: it is otherwise
 *       updated at the scheduler's tick, up to 4 ms late at 250 Hz). A thread that ends between the readings takes
 *       its time with it.</li>
 * </ul>
 * {@link #since} takes the tick clock where it counted at least {@link #TICKS_RESOLVED} (a tick more or less is 5%
 * at most, and ended threads count: a pipelined hierarchical call's thread of its own, the JIT's), else the
 * nanosecond one, else nothing (NaN: neither resolves it).
 */
public final class ProcessCpu {
    private static final Path TASKS = Path.of("/proc/self/task");
    /** The tick clock's difference from which it is taken: 20 ticks of 10 ms. */
    static final long TICKS_RESOLVED = 200_000_000L;

    private final com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
            java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    private final com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean)
            java.lang.management.ManagementFactory.getThreadMXBean();
    private long ticks0;
    private long nanos0;

    /** Reads both clocks: the start of a row's timed calls. */
    public void start() {
        ticks0 = os.getProcessCpuTime();
        nanos0 = schedstat();
    }

    /** The process's CPU nanoseconds since {@link #start}, by the clock that resolves them, or NaN where none does. */
    public double since() {
        long nanos = schedstat();
        long ticks = os.getProcessCpuTime() - ticks0;
        if (ticks >= TICKS_RESOLVED) {
            return ticks;
        }
        return nanos >= 0 && nanos0 >= 0 ? Math.max(0, nanos - nanos0) : Double.NaN;
    }

    /**
     * The sum of the CPU time of the threads of this process alive now, from their schedstat files, or -1 where there
     * are none (not Linux); the Java threads' counts brought up to date first.
     */
    long schedstat() {
        threads.getThreadCpuTime(threads.getAllThreadIds()); // a running thread's count is updated when it is read
        return readSchedstat();
    }

    static long readSchedstat() {
        long sum = 0;
        boolean any = false;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path t : tasks) {
                try {
                    String s = Files.readString(t.resolve("schedstat"));
                    int end = s.indexOf(' ');
                    sum += Long.parseLong(end < 0 ? s.trim() : s.substring(0, end));
                    any = true;
                } catch (IOException | RuntimeException e) {
                    // the thread ended meanwhile, or the file says something else: not counted
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return any && sum > 0 ? sum : -1; // all zeros: a kernel that keeps no counts
    }
}
