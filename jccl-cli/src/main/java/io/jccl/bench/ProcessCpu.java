package io.jccl.bench;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.LongSupplier;

/**
 * The CPU time of every thread of this process, for the benchmark's cpu column. {@code
 * OperatingSystemMXBean.getProcessCpuTime} counts in the kernel's clock ticks (10 ms at the usual 100 Hz): a call
 * of a few microseconds read 0 or one whole tick, and a row's per-call figure came out as 0 or as multiples of
 * 10 ms over its iterations (8.3, 16.7, 33.3 us at 300). On Linux the scheduler keeps every thread's time on the
 * CPU in nanoseconds ({@code /proc/self/task/<tid>/schedstat}, first field), summed here over the threads alive at
 * the reading; elsewhere the tick clock serves.
 */
public final class ProcessCpu {
    private static final Path TASKS = Path.of("/proc/self/task");

    private ProcessCpu() {
    }

    /** The best clock there is here: nanoseconds of CPU of this process so far. */
    public static LongSupplier clock() {
        if (schedstat() >= 0) {
            return ProcessCpu::schedstat;
        }
        com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        return os::getProcessCpuTime;
    }

    /**
     * The sum of the CPU time of the threads of this process alive now, from their schedstat files, or -1 where there
     * are none. A thread that ends between two readings takes its time with it: the difference undercounts by
     * what it ran (the benchmark's threads live through a row).
     */
    static long schedstat() {
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
        return any ? sum : -1;
    }
}
