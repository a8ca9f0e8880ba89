package io.jccl.pipeline;

import io.jccl.CommunicatorConfig;
import io.jccl.instrument.TraceWriter;
import io.jccl.step.CollectiveCall;
import io.jccl.step.Signature;
import io.jccl.transport.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bandwidth trace of one communicator (docs/trace.md): one JSON record per collective call it completes or
 * fails. A world communicator with a trace prefix opens the rank's file; its sub-groups write to the same file
 * with their own {@code comm} id. Off (no writer) without a prefix.
 *
 * <p>Best effort: a record that cannot be written (a full disk) is logged once, with the reason, and the
 * communicator traces no more; neither that nor a file that fails to close changes a call's outcome or a close.
 */
final class CallTrace {
    private static final Logger LOG = LoggerFactory.getLogger(DefaultCommunicator.class);

    private final TraceWriter writer;
    private final boolean owned;
    private final Transport transport;
    private final int communicatorId;
    /**
     * Whether a record could not be written, after which this communicator traces no more. Only the call whose turn
     * it is writes records (the turn orders them), and close() comes after the last call, so no lock guards it.
     */
    private boolean stopped;

    /** The trace of a communicator over {@code transport}: {@code parent}'s writer, else its own if configured. */
    CallTrace(CommunicatorConfig config, Transport transport, int communicatorId, TraceWriter parent) {
        this.owned = parent == null && config.tracePrefix() != null;
        this.writer = parent != null ? parent : owned ? TraceWriter.open(config.tracePrefix(), transport.rank()) : null;
        this.transport = transport;
        this.communicatorId = communicatorId;
    }

    /** The writer sub-groups share, or null when tracing is off. */
    TraceWriter writer() {
        return writer;
    }

    /** The wall-clock start of a call, microseconds since the epoch; 0 when tracing is off. */
    long startMicros() {
        if (writer == null || stopped) {
            return 0;
        }
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    /**
     * One record for a finished (or failed, {@code error} not null) call; see docs/trace.md. A record that cannot be
     * written stops the trace ({@link #stop}); nothing is thrown.
     */
    void record(CollectiveCall call, long startMicros, long startNanos, RuntimeException error) {
        if (writer == null || stopped) {
            return;
        }
        try {
            write(call, startMicros, startNanos, error);
        } catch (RuntimeException e) { // a full disk: the call's outcome stays what it was
            stop("could not write the trace " + writer.path(), e);
        }
    }

    private void write(CollectiveCall call, long startMicros, long startNanos, RuntimeException error) {
        Signature s = call.signature();
        long durationNanos = System.nanoTime() - startNanos;
        writer.write(TraceWriter.record()
                .field("rank", transport.rank())
                .field("world", transport.size())
                .field("comm", communicatorId)
                .field("op", s.op().label())
                .field("seq", s.sequence())
                .field("algorithm", s.algorithm() == null ? "NONE" : s.algorithm().name())
                .field("transport", transport.name())
                .field("dtype", s.dtype().torchName())
                .field("count", s.count())
                .field("reduceOp", s.reduceOp() == null ? null : s.reduceOp().name())
                .field("root", s.root())
                .fields(call.trafficJson())
                .field("startEpochUs", startMicros)
                .field("durationNs", durationNanos)
                .field("status", status(error))
                .toString());
    }

    /** "ok", or the exception's message (its class, should it have none, so that the status stays a string). */
    private static String status(RuntimeException error) {
        if (error == null) {
            return "ok";
        }
        return error.getMessage() != null ? error.getMessage() : error.toString();
    }

    /** Logs why the trace stops, once, and stops it. */
    private void stop(String what, RuntimeException e) {
        if (!stopped) {
            stopped = true;
            LOG.warn("rank {}: {}; communicator {} traces no more: {}", transport.rank(), what, communicatorId,
                    e.getCause() != null ? e.getCause().toString() : e.toString());
        }
    }

    /**
     * Closes the file if this communicator opened it; a close that fails (its last flush, on a full disk) is logged
     * as a failed write is, unless the trace had stopped already.
     */
    void close() {
        if (!owned) {
            return;
        }
        try {
            writer.close();
        } catch (RuntimeException e) {
            stop("could not close the trace " + writer.path(), e);
        }
    }
}
