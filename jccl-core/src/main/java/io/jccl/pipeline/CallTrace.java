package io.jccl.pipeline;

import io.jccl.CommunicatorConfig;
import io.jccl.instrument.TraceWriter;
import io.jccl.step.CollectiveCall;
import io.jccl.step.Signature;
import io.jccl.transport.Transport;

/**
 * The bandwidth trace of one communicator (docs/trace.md): one JSON record per collective call it completes or
 * fails. A world communicator with a trace prefix opens the rank's file; its sub-groups write to the same file
 * with their own {@code comm} id. Off (no writer) without a prefix.
 */
final class CallTrace {
    private final TraceWriter writer;
    private final boolean owned;
    private final Transport transport;
    private final int communicatorId;

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
        if (writer == null) {
            return 0;
        }
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    /** One record for a finished (or failed, {@code error} not null) call; see docs/trace.md. */
    void record(CollectiveCall call, long startMicros, long startNanos, RuntimeException error) {
        if (writer == null) {
            return;
        }
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

    /** Closes the file if this communicator opened it. */
    void close() {
        if (owned) {
            writer.close();
        }
    }
}
