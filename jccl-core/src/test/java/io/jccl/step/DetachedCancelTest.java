package io.jccl.step;

import io.jccl.Algorithm;
import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.instrument.TrafficCounters;
import io.jccl.security.JobSecret;
import io.jccl.store.InMemoryStore;
import io.jccl.transport.Streams;
import io.jccl.transport.tcp.TcpOptions;
import io.jccl.transport.tcp.TcpTransport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/**
 * A call that fails cancels the receives its detached subgroups posted too (the inter-host phase of a
 * hierarchical call, which runs in one): a frame that arrives after the call threw must not land in the caller's
 * buffer. A TCP reader places a payload straight into a posted receive's destination, so one left posted was
 * written after the call had ended.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DetachedCancelTest {

    @Test
    void aFailedCallsDetachedReceiveTakesNoLateFrame() throws Exception {
        JobSecret secret = JobSecret.generate();
        InMemoryStore store = new InMemoryStore();
        CompletableFuture<TcpTransport> one = CompletableFuture.supplyAsync(
                () -> TcpTransport.connect(1, 2, store, TcpOptions.loopback(secret)), r -> new Thread(r).start());
        try (TcpTransport t0 = TcpTransport.connect(0, 2, store, TcpOptions.loopback(secret));
             TcpTransport t1 = one.get(30, TimeUnit.SECONDS)) {
            Signature sig = new Signature(OpType.ALL_REDUCE, 0, DataType.FLOAT32, 4, -1, null,
                    Algorithm.HIERARCHICAL);
            CollectiveCall call0 = new CollectiveCall(t0, Streams.collective(0), sig, Duration.ofSeconds(20),
                    new TrafficCounters());
            CollectiveCall call1 = new CollectiveCall(t1, Streams.collective(0), sig, Duration.ofSeconds(20),
                    new TrafficCounters());
            float[] caller = new float[4];
            CollectiveCall across0 = call0.detachedSubgroup(new int[] {0, 1}, 0);
            across0.postRecv(1, new Buf(DataType.FLOAT32, caller, 0, 4), null);
            call0.cancelOutstanding(); // the call failed (its send across hosts threw) and ends here

            CollectiveCall across1 = call1.detachedSubgroup(new int[] {0, 1}, 0);
            across1.send(0, new Buf(DataType.FLOAT32, new float[] {1, 2, 3, 4}, 0, 4)); // the peer's late frame
            Thread.sleep(500); // rank 0's reader has the frame by now
            assertArrayEquals(new float[4], caller, "the late frame landed in the failed call's buffer");
        }
    }
}
