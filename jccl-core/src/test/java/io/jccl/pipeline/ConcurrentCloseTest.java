package io.jccl.pipeline;

import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.transport.Transport;
import io.jccl.transport.local.QueueMesh;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.CountDownLatch;
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
        CountDownLatch inTransportClose = new CountDownLatch(1);
        CountDownLatch goodbyeDone = new CountDownLatch(1);
        Transport slow = (Transport) Proxy.newProxyInstance(Transport.class.getClassLoader(),
                new Class<?>[] {Transport.class}, (proxy, method, args) -> {
                    if (method.getName().equals("close") && method.getParameterCount() == 0) {
                        inTransportClose.countDown();
                        // a goodbye that takes its time: until the test lets it end
                        assertTrue(goodbyeDone.await(30, TimeUnit.SECONDS), "never let go");
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
        try {
            assertTrue(inTransportClose.await(30, TimeUnit.SECONDS), "the first close never reached the transport");
            // the first close is in the transport's close now; a second close must wait for it
            AtomicBoolean sawClosed = new AtomicBoolean();
            Thread second = new Thread(() -> {
                comm.close();
                sawClosed.set(transportClosed.get());
            }, "second-close");
            second.start();
            // until it waits inside close (or has returned, which it must not have done yet)
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (second.isAlive() && !waitingInClose(second) && System.nanoTime() < until) {
                Thread.sleep(1);
            }
            assertTrue(second.isAlive() || sawClosed.get(), "the second close returned before the first had closed "
                    + "the transport");
            assertTrue(!second.isAlive() || waitingInClose(second), () -> "the second close does not wait: "
                    + second.getState() + " " + java.util.Arrays.toString(second.getStackTrace()));
            goodbyeDone.countDown();
            second.join(30_000);
            assertTrue(!second.isAlive(), "the second close never returned");
            assertTrue(sawClosed.get(), "the second close returned before the first had closed the transport");
        } finally {
            goodbyeDone.countDown();
            first.join(30_000);
        }
    }

    /** Whether {@code t} is blocked or waiting inside a close of this package's communicator. */
    private static boolean waitingInClose(Thread t) {
        Thread.State s = t.getState();
        if (s != Thread.State.WAITING && s != Thread.State.TIMED_WAITING && s != Thread.State.BLOCKED) {
            return false;
        }
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().startsWith("io.jccl.pipeline.") && e.getMethodName().equals("close")) {
                return true;
            }
        }
        return false;
    }
}
