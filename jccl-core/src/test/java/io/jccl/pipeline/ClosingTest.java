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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * close() closes everything it owns whatever closing one part throws, the transport last, and then throws the first
 * failure: a part that threw skipped the rest, and the transport (sockets, shared-memory segments, threads) leaked
 * with no goodbye to the peers.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ClosingTest {

    @Test
    void aPartThatFailsToCloseLeavesNothingElseOpen() {
        Transport inner = QueueMesh.create(1).endpoint(0);
        AtomicBoolean transportClosed = new AtomicBoolean();
        // a sub-group's close has the transport forget its streams: that fails here
        Transport failing = (Transport) Proxy.newProxyInstance(Transport.class.getClassLoader(),
                new Class<?>[] {Transport.class}, (proxy, method, args) -> {
                    if (method.getName().equals("forget")) {
                        throw new IllegalStateException("cannot forget communicator " + args[0]);
                    }
                    if (method.getName().equals("close") && method.getParameterCount() == 0) {
                        transportClosed.set(true);
                    }
                    try {
                        return method.invoke(inner, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        Communicator comm = new DefaultCommunicator(failing, CommunicatorConfig.fromEnvironment().withTrace(null));
        Communicator first = comm.split(0, 0);
        Communicator second = comm.split(0, 0);
        IllegalStateException e = assertThrows(IllegalStateException.class, comm::close);
        assertTrue(transportClosed.get(), "the transport was left open");
        assertTrue(e.getMessage().startsWith("cannot forget communicator"), e.getMessage());
        assertEquals(1, e.getSuppressed().length, "the second sub-group's failure is kept with the first's");
        assertRefusedAsClosed(first::barrier, "a sub-group was left open");
        assertRefusedAsClosed(second::barrier, "a sub-group was left open");
        assertRefusedAsClosed(comm::barrier, "the communicator was left open");
        comm.close(); // a second close does nothing
    }

    /** A call on a closed communicator is refused as such: not any exception (a failure inside the call). */
    private static void assertRefusedAsClosed(org.junit.jupiter.api.function.Executable call, String what) {
        io.jccl.CommunicatorAbortedException e = assertThrows(io.jccl.CommunicatorAbortedException.class, call, what);
        assertTrue(e.getMessage().contains("refused: the communicator is closed"), e.getMessage());
    }
}
