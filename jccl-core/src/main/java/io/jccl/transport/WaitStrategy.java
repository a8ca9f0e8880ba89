package io.jccl.transport;

import java.util.concurrent.locks.LockSupport;

/**
 * How a rank waits for a peer through shared memory: spin (only while the ranks on this host do not outnumber its
 * cores; a spinning rank would otherwise hold the core its peer needs), then {@link Thread#yield()} for a bounded
 * time (a yield hands the core to a runnable peer and costs about a microsecond when there is none), then park
 * for {@link #PARK_NANOS} at a time, so that a rank waiting long for a late peer uses almost no CPU. Linux's timer
 * slack makes any park cost about 50 us, which is why yielding comes first. Not thread-safe: one per wait.
 */
public final class WaitStrategy {
    /** How long a wait yields before it parks. */
    static final long YIELD_NANOS = 20_000_000L;
    static final long PARK_NANOS = 1_000_000L;

    /**
     * Environment variable: spins before the first yield when ranks outnumber cores (default 0; while they do not,
     * {@link #spinsFor} gives 200). Read by {@code io.jccl.JcclSettings}, passed to {@link #spinsFor(int, int)}.
     */
    public static final String OVERSUBSCRIBED_SPINS_ENV = "JCCL_OVERSUBSCRIBED_SPINS";
    public static final int OVERSUBSCRIBED_SPINS_DEFAULT = 0;

    private final int maxSpins;
    private int spins;
    private long yieldingSince;

    public WaitStrategy(int maxSpins) {
        this.maxSpins = maxSpins;
    }

    /**
     * How many times a wait spins before it yields, for {@code ranksOnHost} ranks sharing this host's cores: 200
     * while they fit the cores, else none ({@code JCCL_OVERSUBSCRIBED_SPINS} overrides the latter): a spinning rank
     * would hold the core its peer needs.
     */
    public static int spinsFor(int ranksOnHost, int oversubscribedSpins) {
        return spinsFor(ranksOnHost, Runtime.getRuntime().availableProcessors(), oversubscribedSpins);
    }

    /**
     * As {@link #spinsFor(int, int)}, with the host's {@code cores} counted by the caller (for processes:
     * {@link HostCpus#cores}, the union of the ranks' CPU affinities, since a rank bound to one core sees one).
     */
    public static int spinsFor(int ranksOnHost, int cores, int oversubscribedSpins) {
        return ranksOnHost <= cores ? 200 : oversubscribedSpins;
    }

    /** {@link #spinsFor(int, int)} with the default {@link #OVERSUBSCRIBED_SPINS_DEFAULT}. */
    public static int spinsFor(int ranksOnHost) {
        return spinsFor(ranksOnHost, OVERSUBSCRIBED_SPINS_DEFAULT);
    }

    /** Resets after work ({@code workCount > 0}), else waits one turn. */
    public void idle(int workCount) {
        if (workCount > 0) {
            reset();
        } else {
            idle();
        }
    }

    /**
     * Waits one turn: a spin, a yield or a park, by how long this wait has lasted. A park returns at once while the
     * thread's interrupt status is set: a wait must end on an interrupt itself, or it turns into a busy loop.
     */
    public void idle() {
        if (spins < maxSpins) {
            spins++;
            Thread.onSpinWait();
            return;
        }
        long now = System.nanoTime();
        if (yieldingSince == 0) {
            yieldingSince = now;
        }
        if (now - yieldingSince < YIELD_NANOS) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(PARK_NANOS);
        }
    }

    /** Whether the next {@link #idle} spins (rather than yields or parks). */
    public boolean spinning() {
        return spins < maxSpins;
    }

    /** Starts over: the next wait spins first again. */
    public void reset() {
        spins = 0;
        yieldingSince = 0;
    }
}
