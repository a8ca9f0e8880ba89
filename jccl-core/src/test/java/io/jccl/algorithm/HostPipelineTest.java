package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.instrument.TrafficCounters;
import io.jccl.step.CollectiveCall;
import io.jccl.step.Signature;
import io.jccl.transport.Streams;
import io.jccl.transport.Transport;
import io.jccl.transport.local.QueueMesh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The pipeline of chunks ends, its second thread too, whatever its phases throw. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class HostPipelineTest {

    /**
     * An Error (out of memory, a failed assertion) in the phase within a host skipped the release of the chunks
     * the second thread waits for: the call's thread joined it forever. It now ends both and rethrows the Error.
     */
    @Test
    void anErrorInThePhaseWithinAHostEndsBothThreads() {
        Transport t = QueueMesh.create(1).endpoint(0);
        Signature sig = new Signature(OpType.ALL_REDUCE, 0, DataType.FLOAT32, 4, -1, null, Algorithm.HIERARCHICAL);
        CollectiveCall call = new CollectiveCall(t, Streams.collective(0), sig, Duration.ofSeconds(10),
                new TrafficCounters());
        AssertionError e = assertThrows(AssertionError.class, () -> HostPipeline.run(call, 3, c -> {
            throw new AssertionError("chunk " + c);
        }, c -> call, null));
        assertEquals("chunk 0", e.getMessage());
        assertEquals(0, Thread.getAllStackTraces().keySet().stream()
                .filter(th -> th.getName().startsWith("jccl-hierarchical")).count(), "threads left behind");
        t.close();
    }
}
