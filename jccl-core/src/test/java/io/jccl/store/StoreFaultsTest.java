package io.jccl.store;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Stores whose other end misbehaves: each fails, in bounded time and saying why, and leaves nothing behind. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StoreFaultsTest {

    /**
     * A process that holds a file store's lock file and does not let go (a rank stopped while adding, a stuck NFS
     * lock): every other rank's add waited for it for ever. It now fails once the store's lock timeout has passed,
     * naming the directory; and adds again once the lock is free.
     */
    @Test
    void anAddWhoseLockAnotherProcessHoldsFailsAtTheStoresTimeout(@TempDir Path dir) throws Exception {
        FileStore store = new FileStore(dir, Duration.ofMillis(500));
        assertEquals(1, store.add("n", 1)); // makes the lock file
        // fcntl locks, as Java's: held by another process until its stdin closes
        Process holder = new ProcessBuilder("python3", "-c", "import fcntl, os, sys\n"
                + "fd = os.open(sys.argv[1], os.O_RDWR)\n"
                + "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
                + "print('held', flush=True)\n"
                + "sys.stdin.read()\n", dir.resolve(".lock").toString()).redirectErrorStream(true).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(),
                    StandardCharsets.UTF_8));
            assertEquals("held", out.readLine());
            long start = System.nanoTime();
            CompletableFuture<Long> add = CompletableFuture.supplyAsync(() -> store.add("n", 1));
            StoreException e = assertThrows(StoreException.class, () -> {
                try {
                    add.get(20, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException x) {
                    throw x.getCause();
                }
            });
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms >= 500 && ms < 10_000, ms + " ms");
            assertTrue(e.getMessage().contains("cannot add to key 'n' in " + dir) && e.getMessage().contains(".lock")
                    && e.getMessage().contains("500 ms"), e.getMessage());
        } finally {
            holder.getOutputStream().close();
            holder.destroy();
            assertTrue(holder.waitFor(20, TimeUnit.SECONDS));
        }
        assertEquals(2, store.add("n", 1));
    }
}
