package io.jccl.pipeline;

import io.jccl.CommunicatorConfig;
import io.jccl.diag.FlightRecorder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * One rank's flight recorder and where it is written ({@code JCCL_FLIGHT_RECORDER_DIR}): shared by a world
 * communicator and its sub-groups. The record is written, as {@code jccl_fr_rank<r>.json}, when a call of any of
 * them fails (a timeout, an abort, a disagreement; the first failure only), when the program asks
 * ({@code Communicator.dumpFlightRecorder()}), and when a file named {@code dump} in the directory is created or
 * touched (every live rank of every process that uses the directory writes its record within about a second).
 */
public final class Diagnostics {
    private static final Logger LOG = LoggerFactory.getLogger("io.jccl.COLL");
    /** The file whose creation or change asks every rank using the directory for its record. */
    public static final String TRIGGER = "dump";

    private final FlightRecorder recorder;
    private final Path dir;
    private final int worldSize;
    private volatile boolean dumpedOnFailure;
    private final io.jccl.diag.DebugLog log;

    /**
     * The diagnostics of rank {@code rank} of a world of {@code worldSize}; a {@code persistent} one writes to
     * {@code JCCL_FLIGHT_RECORDER_DIR}, the rendezvous's own (not persistent) nowhere.
     */
    Diagnostics(int rank, int worldSize, CommunicatorConfig config, boolean persistent) {
        this.recorder = new FlightRecorder(rank, persistent ? config.settings().flightRecorderEntries() : 0);
        this.dir = persistent ? config.settings().flightRecorderDir() : null;
        this.worldSize = worldSize;
        this.log = io.jccl.diag.DebugLog.of(config.settings());
        if (dir != null) {
            Trigger.watch(this);
        }
    }

    FlightRecorder recorder() {
        return recorder;
    }

    /** What this rank logs ({@code JCCL_DEBUG}). */
    io.jccl.diag.DebugLog log() {
        return log;
    }

    /** The file this rank's record goes to, or null when no directory is set. */
    Path file() {
        return dir == null ? null : dir.resolve("jccl_fr_rank" + recorder.rank() + ".json");
    }

    /** This rank's record as JSON; {@code reason} says why it was taken. */
    String json(String reason) {
        return recorder.toJson(worldSize, reason);
    }

    /**
     * Writes the record into the directory (atomically: a reader sees the old file or the new one) and returns the
     * file; null when no directory is set.
     */
    Path dump(String reason) {
        Path f = file();
        if (f == null) {
            return null;
        }
        Path tmp = null;
        try {
            Files.createDirectories(dir);
            tmp = Files.createTempFile(dir, ".jccl_fr_rank" + recorder.rank() + "-", ".tmp");
            Files.writeString(tmp, json(reason), StandardCharsets.UTF_8);
            Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            tmp = null;
            LOG.warn("rank {}: flight record written to {}", recorder.rank(), f);
            return f;
        } catch (IOException | RuntimeException e) {
            LOG.warn("rank {}: could not write the flight record to {}: {}", recorder.rank(), f, e.toString());
            return null;
        } finally {
            if (tmp != null) { // the write or the move failed (a full disk; a directory where the record goes)
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException | RuntimeException notDeleted) {
                    LOG.warn("rank {}: could not remove {}: {}", recorder.rank(), tmp, notDeleted.toString());
                }
            }
        }
    }

    /** Writes the record for the first failure of any communicator sharing it. */
    void dumpOnFailure(String reason) {
        if (dir == null || dumpedOnFailure) {
            return;
        }
        dumpedOnFailure = true;
        dump(reason);
    }

    /** Stops watching the trigger file for this rank (its world communicator closed). */
    void close() {
        Trigger.unwatch(this);
    }

    /**
     * The one daemon thread per JVM that watches the trigger files of the live ranks' directories, every 500 ms,
     * and has each rank write its record when a trigger file appears or changes. It ends once no rank is watched
     * (every communicator with a directory closed, or was dropped), and the next rank watched starts another.
     */
    private static final class Trigger {
        private static final Set<Diagnostics> WATCHED = Collections.newSetFromMap(new WeakHashMap<>());
        private static final Map<Path, Long> SEEN = new java.util.HashMap<>();
        /** The watching thread, or null when none runs. Guarded by {@code Trigger.class}. */
        private static Thread thread;

        static synchronized void watch(Diagnostics d) {
            WATCHED.add(d);
            SEEN.computeIfAbsent(d.dir, Trigger::stamp);
            if (thread == null) {
                start();
            }
        }

        /** Starts the watching thread; registered only once it started (a thread that never ran would stay so). */
        private static void start() {
            Thread t = new Thread(Trigger::loop, "jccl-flight-recorder-trigger");
            t.setDaemon(true);
            t.start();
            thread = t;
        }

        static synchronized void unwatch(Diagnostics d) {
            WATCHED.remove(d);
        }

        /** The trigger file's modification time, or -1 when there is none (or it cannot be read). */
        private static long stamp(Path dir) {
            try {
                return Files.getLastModifiedTime(dir.resolve(TRIGGER)).toMillis();
            } catch (IOException | RuntimeException e) {
                return -1;
            }
        }

        /**
         * Whatever ends the loop, the thread is forgotten (under the lock), and where ranks are still watched (the
         * loop died of a {@link VirtualMachineError}) another starts: a dead thread left in {@link #thread} silenced
         * every trigger file for the life of the JVM.
         */
        private static void loop() {
            boolean ended = false; // no ranks left to watch, or interrupted
            try {
                watchUntilUnwatched();
                ended = true;
            } finally {
                synchronized (Trigger.class) {
                    if (thread == Thread.currentThread()) {
                        thread = null;
                        if (!ended && !WATCHED.isEmpty()) {
                            try {
                                start();
                            } catch (RuntimeException | Error notStarted) { // the next watch tries again
                                LOG.warn("the flight recorder's trigger thread could not restart: {}",
                                        notStarted.toString());
                            }
                        }
                    }
                }
            }
        }

        private static void watchUntilUnwatched() {
            while (true) {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return; // loop forgets the thread: the next watch starts another
                }
                java.util.List<Diagnostics> due = new java.util.ArrayList<>();
                synchronized (Trigger.class) {
                    if (WATCHED.isEmpty()) { // decided under the lock: a watch now or later starts another thread
                        thread = null;
                        SEEN.clear();
                        return;
                    }
                    Map<Path, Long> now = new java.util.HashMap<>();
                    for (Diagnostics d : WATCHED) {
                        long stamp = now.computeIfAbsent(d.dir, Trigger::stamp);
                        Long seen = SEEN.get(d.dir);
                        if (stamp >= 0 && (seen == null || stamp != seen)) {
                            due.add(d);
                        }
                    }
                    SEEN.putAll(now);
                }
                for (Diagnostics d : due) { // one rank's failure to write is logged; the others still write theirs
                    try {
                        d.dump("asked for: " + d.dir.resolve(TRIGGER) + " changed");
                    } catch (VirtualMachineError e) {
                        throw e;
                    } catch (Throwable e) {
                        LOG.warn("rank {}: could not write the flight record: {}", d.recorder.rank(), e.toString());
                    }
                }
            }
        }
    }
}
