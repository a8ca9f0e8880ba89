package io.jccl.transport;

import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.transport.local.QueueMesh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A program that makes a sub-group per step and closes it: the transport kept the queues of every closed group's
 * streams (and the recorder its progress), so memory grew with the steps. Closed groups are now forgotten.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ForgetTest {

    @Test
    void closedSubGroupsLeaveNothingBehindInTheTransport() throws Exception {
        QueueMesh mesh = QueueMesh.create(2);
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofSeconds(20));
        List<AbstractTransport> endpoints = new ArrayList<>();
        List<CompletableFuture<Float>> ranks = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            AbstractTransport t = (AbstractTransport) mesh.endpoint(r);
            endpoints.add(t);
            ranks.add(CompletableFuture.supplyAsync(() -> {
                Communicator world = new DefaultCommunicator(t, 0, config);
                float total = 0;
                for (int step = 0; step < 100; step++) {
                    Communicator g = world.split(0, world.rank());
                    float[] x = {1};
                    g.allReduce(Tensor.of(x), ReduceOp.SUM);
                    g.send(Tensor.of(new float[] {step}), 1 - g.rank(), 0); // the point-to-point streams too
                    float[] y = new float[1];
                    g.recv(Tensor.of(y), 1 - g.rank(), 0);
                    total += x[0] + y[0];
                    g.close();
                }
                world.barrier();
                return total;
            }, run -> new Thread(run, "forget-rank").start()));
        }
        for (CompletableFuture<Float> f : ranks) {
            assertEquals(200f + 4950f, f.get(50, TimeUnit.SECONDS));
        }
        for (AbstractTransport t : endpoints) {
            assertTrue(t.inbox.streams() <= 6, "streams kept after 100 closed groups: " + t.inbox.streams());
            t.close();
        }
    }
}
