package io.jccl.launch;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Ending a process that the tool started together with every process it started in turn: torch's {@code mp.spawn}
 * workers, mpirun's ranks, the compiler's passes. Killing the parent alone left them running, re-parented and out
 * of reach ({@link ProcessHandle#descendants()} of a dead process is empty), so the descendants are listed while
 * the parent still lives.
 */
public final class ProcessTree {
    private ProcessTree() {
    }

    /** How long {@link #kill} waits, at most, for the processes it killed to be gone. */
    private static final long KILL_WAIT_MS = 5_000;

    /**
     * Kills {@code p} and all its descendants with SIGKILL, and waits (a few seconds at most) until they are gone.
     * The descendants are killed first, listed again until none is left (a parent may start one meanwhile), then
     * {@code p}, then any process that one of them started last.
     */
    public static void kill(ProcessHandle p) {
        List<ProcessHandle> seen = new ArrayList<>();
        for (int round = 0; round < 5; round++) {
            List<ProcessHandle> tree = p.descendants().filter(ProcessHandle::isAlive).collect(Collectors.toList());
            if (tree.isEmpty()) {
                break;
            }
            seen.addAll(tree);
            tree.forEach(ProcessHandle::destroyForcibly);
        }
        p.destroyForcibly();
        for (ProcessHandle h : seen) { // what a dying descendant started after it was listed
            h.descendants().forEach(ProcessHandle::destroyForcibly);
        }
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(KILL_WAIT_MS);
        seen.add(p);
        for (ProcessHandle h : seen) {
            awaitExit(h, until);
        }
    }

    /** Waits until {@code h} is gone or {@code until} ({@link System#nanoTime()}) has passed. */
    private static void awaitExit(ProcessHandle h, long until) {
        long left = until - System.nanoTime();
        if (left > 0 && h.isAlive()) {
            h.onExit().completeOnTimeout(h, left, TimeUnit.NANOSECONDS).join();
        }
    }

    /**
     * Waits at most {@code limit} for {@code p} to exit; when it has not, kills it with all its descendants
     * ({@link #kill}) and returns false.
     */
    public static boolean waitFor(Process p, Duration limit) throws InterruptedException {
        if (p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
            return true;
        }
        kill(p.toHandle());
        return false;
    }

    /**
     * Stops {@code p} as a terminal's Ctrl-C would let it stop: SIGTERM to {@code p} alone (mpirun, for one, then
     * stops its ranks itself); what is left after {@code grace} of it and of every process it had started when this
     * was called is killed ({@link #kill}).
     */
    public static void stop(Process p, Duration grace) {
        List<ProcessHandle> tree = p.descendants().collect(Collectors.toList());
        long until = System.nanoTime() + grace.toNanos();
        p.destroy();
        awaitExit(p.toHandle(), until);
        for (ProcessHandle h : tree) { // its children may still be stopping
            awaitExit(h, until);
        }
        if (p.isAlive()) {
            kill(p.toHandle());
        }
        for (ProcessHandle h : tree) {
            if (h.isAlive()) {
                kill(h);
            }
        }
    }
}
