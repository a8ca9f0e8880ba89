package io.jccl.diag;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Set;

/**
 * What jccl logs, as {@code NCCL_DEBUG} decides what NCCL prints: {@code JCCL_DEBUG=WARN} (the default: failures
 * and warnings only), {@code INFO} (also the start-up of every rank: its place, the hosts, the transport of each
 * kind of pair, the cost model and where it came from) or {@code TRACE} (also every call with the algorithm it
 * runs), for the subsystems of {@code JCCL_DEBUG_SUBSYS} ({@code INIT}, {@code COLL}, {@code NET}, {@code SHM},
 * {@code TUNE}; all by default). Each subsystem logs through the SLF4J logger {@code io.jccl.<SUBSYS>}; INFO and
 * TRACE lines alike are logged at SLF4J's INFO level, so that {@code JCCL_DEBUG} alone decides, whatever the
 * provider's default level, and a provider's configuration can still silence a subsystem by its logger's name.
 */
public final class DebugLog {
    /** The subsystems. */
    public enum Subsys { INIT, COLL, NET, SHM, TUNE }

    private static final Logger[] LOGGERS = new Logger[Subsys.values().length];

    static {
        for (Subsys s : Subsys.values()) {
            LOGGERS[s.ordinal()] = LoggerFactory.getLogger("io.jccl." + s.name());
        }
    }

    private final boolean[] info = new boolean[Subsys.values().length];
    private final boolean[] trace = new boolean[Subsys.values().length];

    /** A log at {@code level} (WARN, INFO or TRACE) for {@code subsystems} (their names). */
    public DebugLog(String level, Set<String> subsystems) {
        boolean i = level.equals("INFO") || level.equals("TRACE");
        boolean t = level.equals("TRACE");
        for (Subsys s : Subsys.values()) {
            boolean on = subsystems.contains(s.name());
            info[s.ordinal()] = i && on;
            trace[s.ordinal()] = t && on;
        }
    }

    /** The log {@code settings} ask for ({@code JCCL_DEBUG}, {@code JCCL_DEBUG_SUBSYS}). */
    public static DebugLog of(io.jccl.JcclSettings settings) {
        return new DebugLog(settings.debugLevel(), settings.debugSubsystems());
    }

    /** A log that writes nothing at INFO or TRACE. */
    public static DebugLog warnOnly() {
        return new DebugLog("WARN", Set.of());
    }

    /** Whether {@code s} logs at INFO. */
    public boolean isInfo(Subsys s) {
        return info[s.ordinal()];
    }

    /** Whether {@code s} logs at TRACE. */
    public boolean isTrace(Subsys s) {
        return trace[s.ordinal()];
    }

    /** Logs {@code message} (SLF4J's {@code {}} placeholders) for {@code s} at INFO, if on. */
    public void info(Subsys s, String message, Object... args) {
        if (info[s.ordinal()]) {
            LOGGERS[s.ordinal()].info("jccl INFO " + s.name() + " " + message, args);
        }
    }

    /** Logs {@code message} for {@code s} at TRACE, if on. */
    public void trace(Subsys s, String message, Object... args) {
        if (trace[s.ordinal()]) {
            LOGGERS[s.ordinal()].info("jccl TRACE " + s.name() + " " + message, args);
        }
    }
}
