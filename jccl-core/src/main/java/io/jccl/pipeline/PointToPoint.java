package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.CommunicatorConfig;
import io.jccl.OpType;
import io.jccl.Tensor;
import io.jccl.buffer.Buf;
import io.jccl.instrument.Counter;
import io.jccl.instrument.TrafficCounters;
import io.jccl.step.CollectiveCall;
import io.jccl.step.Signature;
import io.jccl.transport.Streams;
import io.jccl.transport.Transport;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * {@code send} and {@code recv}: on the caller's thread, outside the collectives' sequence, on the communicator's
 * point-to-point stream. Each direction of each pair of ranks numbers its messages, so a receive matches the
 * sender's message of the same number and tag; a failure fails the communicator as a collective's does.
 */
final class PointToPoint {
    private final Transport transport;
    private final int communicatorId;
    private final CommunicatorConfig config;
    private final TrafficCounters counters;
    private final ArgumentChecks checks;
    private final FailurePropagation failures;
    private final AtomicLongArray sent;
    private final AtomicLongArray received;

    PointToPoint(Transport transport, int communicatorId, CommunicatorConfig config, TrafficCounters counters,
                 ArgumentChecks checks, FailurePropagation failures) {
        this.transport = transport;
        this.communicatorId = communicatorId;
        this.config = config;
        this.counters = counters;
        this.checks = checks;
        this.failures = failures;
        this.sent = new AtomicLongArray(transport.size());
        this.received = new AtomicLongArray(transport.size());
    }

    void send(Tensor tensor, int dst, int tag) {
        checks.send(tensor, dst);
        failures.checkUsable(OpType.SEND);
        Signature sig = new Signature(OpType.SEND, sent.getAndIncrement(dst), tensor.dtype(), tensor.count(), tag,
                null, Algorithm.DIRECT);
        CollectiveCall call = new CollectiveCall(transport, Streams.pointToPoint(communicatorId), sig,
                config.timeout(), counters);
        counters.add(OpType.SEND, Counter.CALLS, 1);
        failures.enterCall();
        try {
            call.send(dst, Staging.stage(tensor));
        } catch (RuntimeException e) {
            throw failures.fail(failures.ended(OpType.SEND, sig.sequence(), e));
        } finally {
            failures.exitCall();
        }
    }

    void recv(Tensor tensor, int src, int tag, CollectiveOptions options) {
        checks.recv(tensor, src, options);
        failures.checkUsable(OpType.RECV);
        Signature sig = new Signature(OpType.RECV, received.getAndIncrement(src), tensor.dtype(), tensor.count(),
                tag, null, Algorithm.DIRECT);
        Duration timeout = options.timeout() != null ? options.timeout() : config.timeout();
        CollectiveCall call = new CollectiveCall(transport, Streams.pointToPoint(communicatorId), sig, timeout,
                counters);
        counters.add(OpType.RECV, Counter.CALLS, 1);
        failures.enterCall();
        try {
            Buf b = Staging.stage(tensor);
            call.recvInto(src, b);
            Staging.unstage(tensor, b);
        } catch (RuntimeException e) {
            throw failures.fail(failures.ended(OpType.RECV, sig.sequence(), e));
        } finally {
            failures.exitCall();
        }
    }
}
