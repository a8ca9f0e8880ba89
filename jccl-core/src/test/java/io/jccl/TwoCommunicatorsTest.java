package io.jccl;

import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.transport.Transport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/**
 * Two communicators over one transport number their calls apart: a rank waiting in call #0 of one (a message
 * barrier, as the rendezvous's own) must not take a peer's shared-arena signature of call #0 of the other for a
 * disagreement. Found in CI: the rendezvous's barrier on rank 2 failed with a mismatch against rank 0's first
 * shared-memory allreduce, and rank 0 was told "rank 2 closed its communicator".
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TwoCommunicatorsTest {

    @Test
    void aPeersArenaSignatureOfAnotherCommunicatorIsNoMismatch() throws Exception {
        List<Transport> transports = TransportKind.LOCAL.connect(3);
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(20));
        List<CompletableFuture<float[]>> ranks = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            Transport t = transports.get(r);
            int rank = r;
            ranks.add(CompletableFuture.supplyAsync(() -> {
                DefaultCommunicator world = new DefaultCommunicator(t, 0, config);
                DefaultCommunicator other = new DefaultCommunicator(t, 5, config);
                float[] x = {rank + 1};
                try {
                    if (rank == 0) {
                        // publishes allReduce #0's signature in the arena, then waits there for ranks 1 and 2 ...
                        Work w = world.allReduceAsync(Tensor.of(x), ReduceOp.SUM, CollectiveOptions.DEFAULT
                                .withAlgorithm(Algorithm.SHARED_MEMORY));
                        Thread.sleep(200); // ... while rank 2 waits for rank 1 in the other communicator's barrier #0
                        other.barrier(CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.DISSEMINATION));
                        w.await();
                    } else {
                        other.barrier(CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.DISSEMINATION));
                        world.allReduce(Tensor.of(x), ReduceOp.SUM, CollectiveOptions.DEFAULT
                                .withAlgorithm(Algorithm.SHARED_MEMORY));
                    }
                    return x;
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, run -> new Thread(run, "two-comms-rank-" + rank).start()));
        }
        for (CompletableFuture<float[]> f : ranks) {
            assertArrayEquals(new float[] {6}, f.get(30, TimeUnit.SECONDS));
        }
        for (Transport t : transports) {
            t.close();
        }
    }
}
