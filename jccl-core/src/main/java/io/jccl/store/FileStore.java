package io.jccl.store;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.HexFormat;

/**
 * A store in a directory every rank can reach (a shared file system, or /tmp for one host): one file per key,
 * written to a temporary name and renamed into place, so a reader sees a value whole or not at all; counters are
 * updated under an exclusive file lock, waited for at most the store's lock timeout. A key's file is named by the
 * key's UTF-8 bytes in lower-case hex ({@code k} and the hex), or where that would be long
 * ({@link #MAX_HEX_KEY_BYTES}) by their SHA-256 ({@code h} and the hex): names that differ only in case (which a
 * case-insensitive file system, macOS's or an SMB share, takes for one file) and names over a file system's 255
 * bytes never occur.
 */
public final class FileStore implements Store {
    private final Path dir;
    /** How long {@link #add} waits for another process to release the directory's lock file. */
    private final Duration lockTimeout;

    /**
     * A store in {@code dir}, created if need be.
     *
     * @param lockTimeout how long {@link #add} waits while another process holds the directory's lock file
     *                    ({@code .lock}) before it fails: a rank stopped while holding it, or a shared file system
     *                    whose lock service is stuck, would otherwise block every other rank for ever
     * @throws StoreException if the directory cannot be created
     */
    public FileStore(Path dir, Duration lockTimeout) {
        this.dir = dir;
        this.lockTimeout = java.util.Objects.requireNonNull(lockTimeout, "lockTimeout");
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new StoreException("cannot create store directory " + dir, e);
        }
    }

    /**
     * Keys of up to this many UTF-8 bytes are named by their hex (at most 129 characters, under eCryptfs's 143),
     * longer ones hashed (65).
     */
    static final int MAX_HEX_KEY_BYTES = 64;

    private Path file(String key) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        if (k.length <= MAX_HEX_KEY_BYTES) {
            return dir.resolve("k" + HexFormat.of().formatHex(k));
        }
        try {
            return dir.resolve("h" + HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
                    .digest(k)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    @Override
    public void set(String key, byte[] value) {
        Path target = file(key);
        try {
            Path tmp = Files.createTempFile(dir, ".set-", ".tmp");
            boolean moved = false;
            try {
                Files.write(tmp, value);
                try {
                    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                } catch (AtomicMoveNotSupportedException e) {
                    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
                }
                moved = true;
            } finally {
                if (!moved) { // written in part, or not moved into place: nobody else would remove it
                    Files.deleteIfExists(tmp);
                }
            }
        } catch (IOException e) {
            throw new StoreException("cannot set key '" + key + "' in " + dir, e);
        }
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        long deadline = System.nanoTime() + io.jccl.JcclSettings.bounded(timeout).toNanos();
        long sleepMs = 1;
        Path f = file(key);
        while (true) {
            try {
                return Files.readAllBytes(f);
            } catch (NoSuchFileException e) {
                if (System.nanoTime() - deadline >= 0) {
                    throw StoreException.timedOut(key, timeout, " in " + dir, null);
                }
                sleep(sleepMs);
                sleepMs = Math.min(sleepMs * 2, 50);
            } catch (IOException e) {
                throw new StoreException("cannot read key '" + key + "' in " + dir, e);
            }
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException("interrupted", e);
        }
    }

    /**
     * One monitor per lock file in this JVM: a file lock is held by the whole JVM, so two threads of one process
     * (ranks as threads sharing a directory) must take turns before taking it ({@link FileChannel#lock} throws
     * {@code OverlappingFileLockException} otherwise).
     */
    private static final java.util.concurrent.ConcurrentHashMap<Path, Object> JVM_LOCKS =
            new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public long add(String key, long delta) {
        Path lockFile = dir.resolve(".lock");
        synchronized (JVM_LOCKS.computeIfAbsent(lockFile.toAbsolutePath().normalize(), k -> new Object())) {
            return addLocked(lockFile, key, delta);
        }
    }

    @SuppressWarnings("try") // the lock is held for the block, never read
    private long addLocked(Path lockFile, String key, long delta) {
        try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock ignored = lock(ch, lockFile, key)) {
            Path f = file(key);
            long v = delta;
            if (Files.exists(f)) {
                v += Long.parseLong(new String(Files.readAllBytes(f), StandardCharsets.UTF_8).trim());
            }
            set(key, Long.toString(v).getBytes(StandardCharsets.UTF_8));
            return v;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot add to key '" + key + "' in " + dir, e);
        }
    }

    /**
     * The lock of {@code ch}, taken once no other process holds it, trying again with backoff until
     * {@link #lockTimeout} has passed.
     *
     * @throws StoreException naming the lock file and the key once the timeout has passed
     */
    private FileLock lock(FileChannel ch, Path lockFile, String key) throws IOException {
        long deadline = System.nanoTime() + io.jccl.JcclSettings.bounded(lockTimeout).toNanos();
        long sleepMs = 1;
        while (true) {
            FileLock lock = ch.tryLock();
            if (lock != null) {
                return lock;
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new StoreException("cannot add to key '" + key + "' in " + dir + ": another process has held "
                        + "its lock file " + lockFile + " for " + lockTimeout.toMillis() + " ms (a rank stopped or "
                        + "hung while adding, or the file system's locks are stuck)");
            }
            sleep(sleepMs);
            sleepMs = Math.min(sleepMs * 2, 50);
        }
    }

    @Override
    public boolean check(String key) {
        return Files.exists(file(key));
    }

    @Override
    public boolean delete(String key) {
        try {
            return Files.deleteIfExists(file(key));
        } catch (IOException e) {
            throw new StoreException("cannot delete key '" + key + "' in " + dir, e);
        }
    }

    /** Deletes every key (every file of the directory, which stays): for the next job that uses it. */
    public void clear() {
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.deleteIfExists(f);
            }
        } catch (IOException e) {
            throw new StoreException("cannot empty the store directory " + dir, e);
        }
    }

    @Override
    public void close() {
        // files stay for the other ranks; the job removes the directory
    }

}
