package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.CommunicatorConfig;
import io.jccl.DataType;
import io.jccl.OpType;
import io.jccl.PeerAbortedException;
import io.jccl.algorithm.CollectiveAlgorithm;
import io.jccl.algorithm.LinkCost;
import io.jccl.algorithm.Operands;
import io.jccl.algorithm.Topology;
import io.jccl.instrument.TrafficCounters;
import io.jccl.step.CollectiveCall;
import io.jccl.transport.Transport;
import io.jccl.transport.local.QueueMesh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A call that fails while it is set up for its turn (its call object made, started; out of memory there) fails the
 * communicator and tells the peers, as a failure of its algorithm does: it escaped with the communicator still
 * usable, and the peers waited in the call until their deadline.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FailedSetUpTest {

    /** A barrier whose set-up throws an Error (as an out-of-memory in making or starting its call object would). */
    private static final CollectiveAlgorithm BROKEN = new CollectiveAlgorithm() {
        @Override
        public OpType operation() {
            return OpType.BARRIER;
        }

        @Override
        public Algorithm algorithm() {
            return Algorithm.DISSEMINATION;
        }

        @Override
        public boolean startsLate() {
            throw new AssertionError("no memory to set the call up");
        }

        @Override
        public void run(CollectiveCall call, Operands operands) {
        }

        @Override
        public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
            return 0;
        }
    };

    @Test
    void anErrorBeforeTheBodyFailsTheCommunicatorAndTellsThePeers() throws Exception {
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTrace(null)
                .withTimeout(Duration.ofSeconds(20));
        QueueMesh mesh = QueueMesh.create(2);
        Transport t = mesh.endpoint(0);
        DefaultCommunicator peer = new DefaultCommunicator(mesh.endpoint(1), config);
        Diagnostics diagnostics = new Diagnostics(0, 2, config, false);
        FailurePropagation failures = new FailurePropagation(t, 0, diagnostics);
        CallFactory calls = new CallFactory(t, config);
        OrderedExecution execution = new OrderedExecution(t, 0, new TrafficCounters(), failures,
                new CallTrace(config, t, 0, null), diagnostics, new int[] {0, 1}, calls);
        try {
            CompletableFuture<Throwable> peerBarrier = CompletableFuture.supplyAsync(() -> {
                try {
                    peer.barrier();
                    return null;
                } catch (Throwable e) {
                    return e;
                }
            });
            PreparedCall p = new PreparedCall().fill(OpType.BARRIER, DataType.UINT8, 0, -1, null,
                    Algorithm.DISSEMINATION, BROKEN, config.timeout(), false,
                    (prepared, call, algorithm) -> algorithm.run(call, Operands.NONE), null, null);
            long t0 = System.nanoTime();
            AssertionError e = assertThrows(AssertionError.class, () -> execution.runSync(p));
            assertEquals("no memory to set the call up", e.getMessage());
            Throwable refused = assertThrows(RuntimeException.class, () -> failures.checkUsable(OpType.BARRIER));
            assertTrue(refused.getMessage().contains("failed earlier") && refused.getMessage().contains("barrier #0"),
                    refused.getMessage());
            Throwable heard = peerBarrier.get(30, TimeUnit.SECONDS);
            assertTrue(heard instanceof PeerAbortedException && ((PeerAbortedException) heard).originRank() == 0,
                    String.valueOf(heard));
            assertTrue(System.nanoTime() - t0 < 10_000_000_000L, "the peer heard of the failure only at its deadline");
        } finally {
            peer.close();
            t.close();
        }
    }
}
