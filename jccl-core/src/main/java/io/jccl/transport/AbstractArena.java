package io.jccl.transport;

/**
 * What every {@link SharedArena} does the same way: the round counter and the wait.
 */
public abstract class AbstractArena implements SharedArena {
    private final int rank;
    private final int size;
    private final int maxSpins;
    private final boolean oversubscribed;
    private long round;
    private long settled;
    /**
     * The wait in progress: kept when {@link #await} returns at a slice's end without success, so that the next
     * slice of the same wait goes on parking instead of spinning and yielding again; reset on success.
     */
    private final WaitStrategy idle;
    private volatile boolean interrupted;

    /**
     * Ranks that are threads of this JVM, {@code ranksOnHost} of them on its processors; {@code oversubscribedSpins}:
     * see {@link WaitStrategy#spinsFor(int, int)}.
     */
    protected AbstractArena(int rank, int size, int ranksOnHost, int oversubscribedSpins) {
        this(rank, size, WaitStrategy.spinsFor(ranksOnHost, oversubscribedSpins),
                ranksOnHost > Runtime.getRuntime().availableProcessors());
    }

    /**
     * {@code maxSpins}: spins before a wait yields ({@link WaitStrategy#spinsFor(int, int, int)});
     * {@code oversubscribed}: {@link #oversubscribed()}.
     */
    protected AbstractArena(int rank, int size, int maxSpins, boolean oversubscribed) {
        this.rank = rank;
        this.size = size;
        this.maxSpins = maxSpins;
        this.oversubscribed = oversubscribed;
        this.idle = new WaitStrategy(maxSpins);
    }

    @Override
    public final boolean oversubscribed() {
        return oversubscribed;
    }

    @Override
    public final int rank() {
        return rank;
    }

    @Override
    public final int size() {
        return size;
    }

    @Override
    public final void interrupt() {
        interrupted = true;
    }

    @Override
    public final void clearInterrupt() {
        if (interrupted) {
            interrupted = false;
        }
    }

    @Override
    public final long nextRound() {
        return ++round;
    }

    @Override
    public final long currentRound() {
        return round;
    }

    @Override
    public final long settledRound() {
        return settled;
    }

    @Override
    public final void settled(long r) {
        settled = Math.max(settled, r);
    }

    @Override
    public final FrameHeader publishedSignature(int r) {
        long before = counter(r, ARRIVED);
        if (before <= 0) {
            return null;
        }
        // r rewrites this slot only after it publishes round before + 1, so an unchanged counter afterwards means
        // an untouched slot
        FrameHeader h = signature(r, (int) (before & 1));
        java.lang.invoke.VarHandle.acquireFence();
        return counter(r, ARRIVED) == before ? h : null;
    }

    /**
     * Called every 16th turn of a wait (keep it cheap, rate-limit anything slow): throws {@link PeerLostException}
     * if a peer is known to be gone.
     */
    protected abstract void checkPeers();

    @Override
    public final int await(int which, long value, long untilNanos) {
        return await(0, size, which, value, untilNanos);
    }

    @Override
    public final int awaitRank(int r, int which, long value, long untilNanos) {
        return await(r, r + 1, which, value, untilNanos);
    }

    /**
     * Waits for the counters of ranks {@code [from, to)}; -1, or the lowest that is not there yet. Returns early,
     * as at the deadline, when the calling thread is interrupted (its status stays set, for the caller to see): a
     * park returns at once while it is, so the wait would otherwise turn into a busy loop until the deadline.
     */
    private int await(int from, int to, int which, long value, long untilNanos) {
        for (int turn = 0; ; turn++) {
            while (from < to && counter(from, which) >= value) {
                from++;
            }
            if (from == to) {
                idle.reset();
                return -1;
            }
            // the clock (about 20 ns here) on every 8th spin only: a spin's latency is that of noticing the peer
            if (interrupted || ((turn & 7) == 7 || !idle.spinning())
                    && (System.nanoTime() - untilNanos >= 0 || Thread.currentThread().isInterrupted())) {
                return from;
            }
            if ((turn & 15) == 15) { // not on every spin: a peer's death is news within ~100 ms anyway
                checkPeers();
            }
            idle.idle();
        }
    }
}
