package io.jccl.transport.shm;

import io.jccl.transport.Frame;
import io.jccl.transport.Inbox;
import io.jccl.transport.PeerLostException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The liveness of the peers of one rank: their segments' owner's locks (their pids where a lock cannot tell),
 * checked at most every {@link #CHECK_NANOS} while the rank waits. A peer whose process is gone (or a zombie: killed, not yet reaped) is reported to every communicator
 * through the inbox, and its segment, which its owner cannot remove any more, is deleted.
 */
final class PeerWatch {
    private static final Logger LOG = LoggerFactory.getLogger(PeerWatch.class);
    static final long CHECK_NANOS = 100_000_000L;
    private static final boolean PROC = Files.isReadable(Path.of("/proc/self/stat"));

    private final int rank;
    private final Inbox inbox;
    /** By rank: the pid, or -1 for this rank, for a peer that left cleanly and for one already reported dead. */
    private final long[] pids;
    private final Path[] files;
    private long lastCheck;

    PeerWatch(int rank, int size, Inbox inbox) {
        this.rank = rank;
        this.inbox = inbox;
        this.pids = new long[size];
        this.files = new Path[size];
        this.locks = new java.nio.channels.FileChannel[size];
        java.util.Arrays.fill(pids, -1);
    }

    /** The rank each peer has in the messages, where it differs from its rank here (a host's group); or null. */
    private volatile int[] names;

    /** Messages name peer {@code p} {@code worldRanks[p]}: the rank the program knows, not the host group's. */
    void names(int[] worldRanks) {
        this.names = worldRanks.clone();
    }

    String name(int p) {
        int[] n = names;
        return "rank " + (n == null || p < 0 || p >= n.length ? p : n[p]);
    }

    void watch(int peer, long pid, Path file) {
        files[peer] = file;
        pids[peer] = pid;
        if (ShmSegment.ownedHere(file)) {
            return; // a rank of this process: alive while it owns it, and no channel of ours may close on it
        }
        try { // kept open until close: see ShmSegment.ownerHoldsLock
            locks[peer] = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.READ,
                    java.nio.file.StandardOpenOption.WRITE);
        } catch (IOException | RuntimeException e) {
            LOG.debug("{}: cannot open {} to watch its owner's lock; its pid alone tells: {}", name(rank), file,
                    e.toString());
        }
    }

    /** By rank: a channel on the peer's segment, through which its owner's lock is read; or null. */
    private final java.nio.channels.FileChannel[] locks;

    /** Closes the channels on the peers' segments. */
    void close() {
        for (int p = 0; p < locks.length; p++) {
            java.nio.channels.FileChannel c = locks[p];
            locks[p] = null;
            if (c != null) {
                try {
                    c.close();
                } catch (IOException ignored) {
                    // closing
                }
            }
        }
    }

    /**
     * Whether peer {@code p}'s process lives: from its segment's owner's lock where that can tell (whatever pid
     * namespace the peer runs in), else from its pid.
     */
    private boolean peerAlive(int p) {
        if (ShmSegment.ownedHere(files[p])) {
            return true;
        }
        java.nio.channels.FileChannel c = locks[p];
        Boolean held = c == null ? null : ShmSegment.ownerHoldsLock(c);
        return held != null ? held : isAlive(pids[p]);
    }

    /**
     * Drains this rank's rings, waiting for another thread that drains them ({@link ShmDrain#drainAll}); or null.
     * Run before a peer found gone is declared dead: its goodbye may still wait in its ring.
     */
    private volatile Runnable drainAll;

    /** Has {@link #check} run {@code drainAll} (see {@link #drainAll}) before it declares a peer dead. */
    void drainBeforeDeclaringDead(Runnable drainAll) {
        this.drainAll = drainAll;
    }

    /** {@code peer} left cleanly (it said goodbye): its process may exit now without that being a failure. */
    synchronized void departed(int peer) {
        pids[peer] = -1;
    }

    /**
     * Whether process {@code pid} runs: on Linux from {@code /proc/<pid>/stat}, where a zombie (state Z) or a dead
     * task (X) counts as gone, although {@link ProcessHandle#isAlive()} says alive until its parent reaps it;
     * elsewhere (or when {@code /proc} cannot tell) from {@link ProcessHandle}.
     */
    static boolean isAlive(long pid) {
        if (pid <= 0) {
            return false;
        }
        if (PROC) {
            try {
                char state = state(new String(Files.readAllBytes(Path.of("/proc", Long.toString(pid), "stat")),
                        StandardCharsets.ISO_8859_1));
                if (state != 0) {
                    return state != 'Z' && state != 'X' && state != 'x'; // x: dead, on kernels 2.6.33 to 3.13
                }
            } catch (NoSuchFileException e) {
                return false;
            } catch (IOException | RuntimeException e) {
                LOG.debug("cannot read the state of pid {} from /proc: {}", pid, e.toString());
            }
        }
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /**
     * The state letter of a {@code /proc/<pid>/stat} line ({@code "pid (comm) state ppid ..."}), or 0 if there is
     * none: comm may hold spaces and parentheses, so the state is what follows the last ')'.
     */
    static char state(String stat) {
        int close = stat.lastIndexOf(')');
        if (close < 0) {
            return 0;
        }
        String rest = stat.substring(close + 1).trim();
        return rest.isEmpty() ? 0 : rest.charAt(0);
    }

    /**
     * Every ~100 ms: a peer whose process is gone is reported to every communicator; returns the lowest such rank
     * found by this call, or -1. Before it declares one dead, it drains this rank's rings, waiting for a thread of
     * this rank that drains them ({@link #drainBeforeDeclaringDead}), and spares a peer whose goodbye was there: a
     * peer that closed cleanly and exited is not a failure of every communicator of this transport.
     *
     * @throws PeerLostException if {@code doing} is a send and {@code peer}, the destination, is gone
     */
    int check(int peer, String doing) {
        long now = System.nanoTime();
        if (now - lastCheck < CHECK_NANOS) {
            return -1;
        }
        lastCheck = now;
        java.util.BitSet gone = null;
        for (int p = 0; p < pids.length; p++) {
            if (p != rank && pids[p] > 0 && !peerAlive(p)) {
                gone = gone == null ? new java.util.BitSet(pids.length) : gone;
                gone.set(p);
            }
        }
        if (gone == null) {
            return -1;
        }
        // a peer that said goodbye and exited is not dead: its goodbye may still wait in its ring, which another
        // thread of this rank is draining now (its drain() gave up on the lock) or nobody drained since it came
        Runnable drain = drainAll;
        if (drain != null) {
            drain.run();
        }
        int dead = -1;
        for (int p = gone.nextSetBit(0); p >= 0; p = gone.nextSetBit(p + 1)) {
            long pid;
            synchronized (this) { // once: another thread's check may have found it too
                pid = pids[p];
                if (pid <= 0) {
                    continue; // it left cleanly after all (its goodbye was in its ring)
                }
                pids[p] = -1;
            }
            ShmSegment.delete(files[p]); // its owner cannot remove it any more
            inbox.peerLost(Frame.peerGone(p, name(p) + " (pid " + pid + ") died: its process is gone "
                    + "(noticed while " + doing + (peer >= 0 ? " " + name(peer) : "") + ")"));
            dead = dead < 0 ? p : dead;
            if (doing.startsWith("sending") && p == peer) {
                throw new PeerLostException(p, name(p) + " (pid " + pid + ") died: its process is gone "
                        + "(noticed while sending to it)", null);
            }
        }
        return dead;
    }
}
