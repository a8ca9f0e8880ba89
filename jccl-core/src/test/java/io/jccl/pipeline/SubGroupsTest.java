package io.jccl.pipeline;

import io.jccl.Communicator;
import io.jccl.CommunicatorAbortedException;
import io.jccl.CommunicatorConfig;
import io.jccl.Tensor;
import io.jccl.transport.Transport;
import io.jccl.transport.local.QueueMesh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Proxy;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Splits of one rank as the exchange's timing may run them: over a parent of one rank whose allGather the test
 * holds back, so that what the other members' ranks may see (another thread's split finishing first, a close
 * meanwhile) happens here on purpose.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SubGroupsTest {
    /** A thread per task: the common pool may run one task at a time (2 cores, JDK 25), and these must overlap. */
    private static final java.util.concurrent.Executor THREAD = r -> {
        Thread t = new Thread(r, "split");
        t.setDaemon(true);
        t.start();
    };


    /**
     * Sub-groups of a parent of one rank whose allGather (which a split makes with {color, key}) first runs
     * {@code during} with the color, then copies its input to its output.
     */
    private static SubGroups subGroups(Transport transport, Consumer<Integer> during) {
        Communicator parent = (Communicator) Proxy.newProxyInstance(Communicator.class.getClassLoader(),
                new Class<?>[] {Communicator.class}, (proxy, method, args) -> {
                    if (!method.getName().equals("allGather")) {
                        throw new UnsupportedOperationException(method.getName());
                    }
                    int[] in = (int[]) ((Tensor) args[0]).array();
                    during.accept(in[0]);
                    System.arraycopy(in, 0, (int[]) ((Tensor) args[1]).array(), 0, in.length);
                    return null;
                });
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment();
        return new SubGroups(parent, transport, 0, config, null, new Diagnostics(0, 1, config, false));
    }

    /**
     * Two threads' splits, the first to enter its exchange the last to leave it: the index (and so the id) of a
     * sub-group was taken after the exchange, in the order the threads left it, which another rank need not
     * share, and the members of one group derived different ids. The first exchange now takes the first index.
     */
    @Test
    void splitsTakeTheirIndicesInTheOrderOfTheirExchanges() throws Exception {
        Transport transport = QueueMesh.create(1).endpoint(0);
        CountDownLatch firstEntered = new CountDownLatch(1);
        CountDownLatch secondDone = new CountDownLatch(1);
        SubGroups groups = subGroups(transport, color -> {
            if (color == 0) { // the first split's exchange ends after the second split, if that one can run
                firstEntered.countDown();
                try {
                    secondDone.await(1, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        try {
            CompletableFuture<Communicator> first = CompletableFuture.supplyAsync(() -> groups.split(0, 0), THREAD);
            assertTrue(firstEntered.await(10, TimeUnit.SECONDS));
            CompletableFuture<Communicator> second = CompletableFuture.supplyAsync(() -> groups.split(1, 0), THREAD)
                    .whenComplete((c, e) -> secondDone.countDown());
            Communicator a = first.get(10, TimeUnit.SECONDS);
            Communicator b = second.get(10, TimeUnit.SECONDS);
            assertEquals(SubGroups.childId(0, 0, 0), ((DefaultCommunicator) a).communicatorId(),
                    "the first exchange's sub-group");
            assertEquals(SubGroups.childId(0, 1, 1), ((DefaultCommunicator) b).communicatorId(),
                    "the second exchange's sub-group");
        } finally {
            groups.closeAll();
            transport.close();
        }
    }

    /**
     * A split whose exchange ended while the parent closed: closing the parent closed the sub-groups it knew of,
     * and the one the split then made stayed open over the closed parent's transport. It is now closed as made.
     */
    @Test
    void aSplitThatEndsWhileTheParentClosesMakesAClosedSubGroup() {
        Transport transport = QueueMesh.create(1).endpoint(0);
        SubGroups[] groups = new SubGroups[1];
        groups[0] = subGroups(transport, color -> groups[0].closeAll()); // the parent closes during the exchange
        try {
            Communicator child = groups[0].split(0, 0);
            CommunicatorAbortedException e = assertThrows(CommunicatorAbortedException.class, child::barrier);
            assertTrue(e.getMessage().contains("the communicator is closed"), e.getMessage());
        } finally {
            transport.close();
        }
    }
}
