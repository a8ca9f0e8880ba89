package io.jccl.pipeline;

import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.transport.Transport;
import io.jccl.transport.local.QueueMesh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A close on one thread while another thread's close runs returns only once that one has ended: a program that
 * closed on a helper thread and then, on its main thread, closed again and exited, ended the helper's close before
 * its transport had said goodbye, and its peers took the process for dead.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ConcurrentCloseTest {

    @Test
    void aSecondCloseWaitsForTheFirstToEnd() throws Exception {
        Transport inner = QueueMesh.create(1).endpoint(0);
        AtomicBoolean transportClosed = new AtomicBoolean();
        Transport slow = (Transport) Proxy.newProxyInstance(Transport.class.getClassLoader(),
                new Class<?>[] {Transport.class}, (proxy, method, args) -> {
                    if (method.getName().equals("close") && method.getParameterCount() == 0) {
                        Thread.sleep(1000); // a goodbye that takes its time
                        inner.close();
                        transportClosed.set(true);
                        return null;
                    }
                    try {
                        return method.invoke(inner, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        Communicator comm = new DefaultCommunicator(slow, CommunicatorConfig.fromEnvironment());
        comm.allReduce(new float[4]);
        Thread first = new Thread(comm::close, "first-close");
        first.start();
        Thread.sleep(200); // the first close is in the transport's close now
        long t0 = System.nanoTime();
        comm.close();
        long waitedMs = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(transportClosed.get(), "the second close returned after " + waitedMs
                + " ms, before the first had closed the transport");
        first.join();
    }
}
