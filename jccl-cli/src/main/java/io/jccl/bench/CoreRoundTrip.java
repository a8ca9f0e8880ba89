package io.jccl.bench;

import io.jccl.Communicator;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

/**
 * The round trip of a cache line between the cores of rank 0 and rank 1, measured by those two ranks themselves just
 * before a row is timed, so that a row can be read against the hardware it ran on. On a virtual machine the host
 * moves the guest's CPUs between a core's two threads, two cores and two dies, and the round trip moves with them
 * (on this project's 2-vCPU machine: about 60-120 ns in one placement, 420-470 ns in another, each holding for
 * seconds; docs/performance.md, session 36). A small collective between two ranks is one or two such transfers, so
 * its time follows the placement, Open MPI's as much as jccl's, and two rows measured seconds apart can compare two
 * placements rather than two libraries. {@code mpi_bench.c} measures Open MPI's ranks the same way.
 *
 * <p>How: rank 0 creates a 4 KiB file in {@code /dev/shm} (tmpfs: no writeback faults) and tells rank 1 its name;
 * both map it, and rank 0 removes the name once rank 1 has mapped it (the mappings stay), so that nothing is left
 * behind whatever ends the run. The two pass a counter through two lines 256 bytes apart (one written by each, so
 * that no prefetched pair of lines holds both), release stores and acquire loads through a {@link VarHandle} view,
 * as jccl's own arena does. A measurement is a warm-up window and eleven timed windows of {@link #WINDOW} round
 * trips; it returns the median window's nanoseconds per round trip: a window that a compiler thread or another
 * process interrupted on one of the two cores does not move it. The other ranks only take part in the barriers.
 * Every method is collective.
 *
 * <p>Never a hang: a window longer than {@link #WINDOW_BUDGET_NANOS} (a pair that shares one core passes the line
 * once a scheduler slice), a partner that stops answering for {@link #GIVE_UP_NANOS}, or a rank that cannot map the
 * file (ranks on different hosts) turns the measurement off for good, on every rank alike ({@link Double#NaN}).
 */
public final class CoreRoundTrip {
    static final int WINDOW = 5_000;
    static final long WINDOW_BUDGET_NANOS = 200_000_000L;
    static final long GIVE_UP_NANOS = 2_000_000_000L;
    private static final int WINDOWS = 11;
    private static final int WARM_WINDOWS = 60;
    private static final long WARM_PAUSE_MILLIS = 200;
    private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class,
            ByteOrder.nativeOrder());
    private static final int PING = 0;
    private static final int PONG = 256;
    /** What rank 0 writes as the ping to end a measurement early (over its budget): rank 1 stops too. */
    private static final long STOP = -1;
    private static final int FILE_BYTES = 4096;

    private final Communicator comm;
    private final ByteBuffer lines; // ranks 0 and 1 while on; null otherwise
    private boolean on; // alike on every rank
    private long sent; // the counter's last value exchanged (each window goes on from the one before)

    private CoreRoundTrip(Communicator comm, ByteBuffer lines, boolean on) {
        this.comm = comm;
        this.lines = lines;
        this.on = on;
    }

    /**
     * Whether a bench of {@code ranks} ranks measures it: two or more that fit the host's {@code cores} (ranks that
     * outnumber them would spin against each other, or pass the line once a scheduler slice), and not on the bed's
     * simulated hosts, which share this machine's cores.
     */
    public static boolean applies(boolean onBed, int ranks, int cores) {
        return !onBed && ranks >= 2 && ranks <= cores;
    }

    /**
     * Collective: sets up the pair's lines and warms the measurement, or makes an instance that measures nothing
     * ({@link Double#NaN}) when {@code enabled} is false (on every rank alike) or there are fewer than two ranks.
     */
    public static CoreRoundTrip open(Communicator comm, boolean enabled) {
        if (!enabled || comm.size() < 2) {
            return new CoreRoundTrip(comm, null, false);
        }
        long[] token = {0};
        Path file = null;
        MappedByteBuffer lines = null;
        long[] ok = {1};
        if (comm.rank() == 0) {
            token[0] = ProcessHandle.current().pid() << 20 ^ System.nanoTime() & 0xfffff;
            file = dir().resolve("jccl-bench-rtt-" + token[0]);
            try {
                // a new file, never one that is there already (or a link planted under that name)
                try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                        StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
                    ch.write(ByteBuffer.allocate(FILE_BYTES));
                    lines = ch.map(FileChannel.MapMode.READ_WRITE, 0, FILE_BYTES);
                }
            } catch (IOException | RuntimeException e) {
                ok[0] = 0;
            }
        }
        comm.broadcast(Tensor.of(token), 0);
        if (comm.rank() == 1) {
            try (FileChannel ch = FileChannel.open(dir().resolve("jccl-bench-rtt-" + token[0]),
                    StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
                lines = ch.map(FileChannel.MapMode.READ_WRITE, 0, FILE_BYTES);
            } catch (IOException | RuntimeException e) { // another host: its /dev/shm has no such file
                ok[0] = 0;
            }
        }
        comm.allReduce(Tensor.of(ok), ReduceOp.MIN); // after it, rank 1 has mapped the file or given up
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                // a 4 KiB file left in /dev/shm; the measurement does not need its name
            }
        }
        CoreRoundTrip made = new CoreRoundTrip(comm, ok[0] == 1 ? lines : null, ok[0] == 1);
        // the JIT's: windows enough for C2 to compile window() whole, then a pause in which its compiler thread has
        // the rank's core to itself
        made.measure(WARM_WINDOWS);
        try {
            Thread.sleep(WARM_PAUSE_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return made;
    }

    /** Whether every rank says {@code mine}. */
    private static boolean agree(Communicator comm, boolean mine) {
        long[] all = {mine ? 1 : 0};
        comm.allReduce(Tensor.of(all), ReduceOp.MIN);
        return all[0] == 1;
    }

    private static Path dir() {
        Path shm = Path.of("/dev/shm");
        return Files.isDirectory(shm) && Files.isWritable(shm) ? shm : Path.of(System.getProperty("java.io.tmpdir"));
    }

    /**
     * Collective: nanoseconds per round trip between rank 0's and rank 1's cores, right now; on rank 0 (NaN on the
     * others, and everywhere once the measurement is off).
     */
    public double measure() {
        return measure(WINDOWS);
    }

    private double measure(int timedWindows) {
        if (!on) { // alike on every rank
            return Double.NaN;
        }
        comm.barrier();
        int me = comm.rank();
        boolean answered = true;
        double[] windows = new double[timedWindows];
        for (int w = -1; w < timedWindows && answered && me <= 1; w++) {
            long t0 = System.nanoTime();
            answered = window(lines, me == 0, sent);
            long took = System.nanoTime() - t0;
            sent += WINDOW;
            if (answered && me == 0 && took > WINDOW_BUDGET_NANOS) { // rank 0 judges; rank 1 sees the stop
                LONGS.setRelease(lines, PING, STOP);
                answered = false;
            }
            if (w >= 0) {
                windows[w] = (double) took / WINDOW;
            }
        }
        on = agree(comm, answered); // every rank turns it off together
        if (!on || me != 0) {
            return Double.NaN;
        }
        Arrays.sort(windows);
        return windows[timedWindows / 2];
    }

    /**
     * One window: {@link #WINDOW} round trips from counter value {@code from + 1}, rank 0 ({@code pinging}) writing
     * the ping and waiting for the pong, rank 1 the other way round; false if the partner stopped answering or rank 0
     * sent {@link #STOP}. A method of its own, so that the JIT compiles it whole during {@link #open}'s warm-up and
     * not during a measurement, where the compiler thread would take the core of a rank bound to one.
     */
    private static boolean window(ByteBuffer lines, boolean pinging, long from) {
        for (long v = from + 1; v <= from + WINDOW; v++) {
            if (pinging) {
                LONGS.setRelease(lines, PING, v);
                if (!awaitValue(lines, PONG, v)) {
                    return false;
                }
            } else {
                if (!awaitValue(lines, PING, v)) {
                    return false;
                }
                LONGS.setRelease(lines, PONG, v);
            }
        }
        return true;
    }

    /**
     * Spins until the line at {@code at} holds {@code v}; false if it holds {@link #STOP}, or after
     * {@link #GIVE_UP_NANOS} without {@code v}.
     */
    private static boolean awaitValue(ByteBuffer lines, int at, long v) {
        long since = 0;
        for (int spin = 1; ; spin++) {
            long seen = (long) LONGS.getAcquire(lines, at);
            if (seen == v) {
                return true;
            }
            if (seen == STOP) {
                return false;
            }
            if ((spin & 4095) == 0) {
                long now = System.nanoTime();
                if (since == 0) {
                    since = now;
                } else if (now - since > GIVE_UP_NANOS) {
                    return false;
                }
            }
            Thread.onSpinWait();
        }
    }
}
