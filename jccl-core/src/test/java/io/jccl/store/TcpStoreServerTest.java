package io.jccl.store;

import io.jccl.security.JobSecret;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The threads of {@link TcpStoreServer}: the one serving a client that asked for a key nobody sets waited for the key
 * (up to the get's timeout, a day at most) even after the client had died or the server had closed, one thread per
 * dead client. It ends once its connection closes.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TcpStoreServerTest {

    /** The threads serving clients of a store's server, of every server of this JVM. */
    private static Set<Thread> servingThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("jccl-store-client"))
                .collect(Collectors.toSet());
    }

    /** Fails naming {@code what} unless {@code done} holds within 10 s; polls it every 10 ms. */
    private static void await(BooleanSupplier done, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() - deadline >= 0) {
                fail("no " + what + " within 10 s");
            }
            Thread.sleep(10);
        }
    }

    /**
     * A client of {@code server} whose get of a key nobody sets is under way, the server's thread serving it waiting
     * for the key; that thread is {@code serving[0]}, the client's failure the future {@code failed}.
     */
    private static TcpStore waitingClient(TcpStoreServer server, JobSecret secret, Thread[] serving,
                                          CompletableFuture<StoreException> failed) throws InterruptedException {
        Set<Thread> before = servingThreads();
        TcpStore client = TcpStore.connect("127.0.0.1", server.port(), secret, Duration.ofSeconds(10));
        client.set("here", new byte[] {1}); // served: its thread exists and has passed the handshake
        Set<Thread> added = servingThreads();
        added.removeAll(before);
        assertEquals(1, added.size(), "threads serving the new client: " + added);
        serving[0] = added.iterator().next();
        new Thread(() -> failed.complete(assertThrows(StoreException.class,
                () -> client.get("never", Duration.ofMinutes(10)))), "test-store-get").start();
        // in Object.wait for the key (reading the socket for the next request, it is RUNNABLE)
        await(() -> serving[0].getState() == Thread.State.TIMED_WAITING, "wait of the server's thread for the key");
        return client;
    }

    @Test
    void aClientThatDiesWaitingForAKeyFreesTheThreadServingIt() throws Exception {
        JobSecret secret = JobSecret.generate();
        try (TcpStoreServer server = TcpStoreServer.start("127.0.0.1", 0, secret)) {
            Thread[] serving = new Thread[1];
            CompletableFuture<StoreException> failed = new CompletableFuture<>();
            TcpStore client = waitingClient(server, secret, serving, failed);
            client.close(); // as the client's process dies: its connection closes
            await(() -> !serving[0].isAlive(), "end of the thread that served the closed connection");
            assertTrue(failed.get(10, TimeUnit.SECONDS).getMessage().contains("lost the store"),
                    failed.get().getMessage());
            // the server still serves
            try (TcpStore other = TcpStore.connect("127.0.0.1", server.port(), secret, Duration.ofSeconds(10))) {
                other.set("never", new byte[] {2});
                assertEquals(2, other.get("never", Duration.ofSeconds(10))[0]);
            }
        }
    }

    @Test
    void closingTheServerFreesAThreadWaitingForAKey() throws Exception {
        JobSecret secret = JobSecret.generate();
        Thread[] serving = new Thread[1];
        CompletableFuture<StoreException> failed = new CompletableFuture<>();
        TcpStore client;
        try (TcpStoreServer server = TcpStoreServer.start("127.0.0.1", 0, secret)) {
            client = waitingClient(server, secret, serving, failed);
        }
        try (client) {
            await(() -> !serving[0].isAlive(), "end of the thread that served a connection of the closed server");
            failed.get(10, TimeUnit.SECONDS);
        }
    }
}
