package io.jccl.transport;

import io.jccl.DataType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.store.InMemoryStore;
import io.jccl.transport.local.QueueMesh;
import io.jccl.transport.shm.ShmTransport;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The arenas' copies and reductions with buffers over memory (direct buffers, in either byte order) as well as
 * arrays: what the hierarchical algorithms do with a tensor from {@code Communicator.allocate} across hosts. Both
 * kinds of arena (threads' and shared memory's), small buffers (the arenas' fast paths for arrays) and large ones
 * (copied and reduced in pieces).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ArenaBuffersTest {
    private static final int ARENA_BYTES = 4 << 20;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"threads", "shm"})
    void putGetAndReduceShouldTakeDirectBuffersAsArrays(String kind, @TempDir Path dir) throws Exception {
        java.util.List<Transport> open = new java.util.ArrayList<>();
        try {
            check(kind, arenas(kind, dir, open));
        } finally {
            for (Transport t : open) {
                t.close();
            }
        }
    }

    private static void check(String kind, SharedArena[] a) {
        for (DataType dt : new DataType[] {DataType.FLOAT32, DataType.FLOAT64, DataType.INT32}) {
            for (int n : new int[] {5, 300_000}) { // 300,000: past the 1 MiB pieces of the shm arena's copies
                for (ByteOrder order : new ByteOrder[] {ByteOrder.LITTLE_ENDIAN, ByteOrder.BIG_ENDIAN}) {
                    String what = kind + " " + dt + " n=" + n + " " + order;
                    int at = 3;
                    Buf values = direct(dt, n, order);
                    Buf base = direct(dt, n, order);
                    for (int i = 0; i < n; i++) {
                        set(values, i, i % 1000 - 500);
                        set(base, i, 7 * (i % 13));
                    }
                    a[0].put(1, at, values); // from memory
                    Buf intoMemory = direct(dt, n + 2, order);
                    a[1].get(0, 1, at, intoMemory, 2, n); // into memory at an offset
                    Buf intoArray = Buf.allocate(dt, n);
                    a[1].get(0, 1, at, intoArray);
                    a[1].reduce(0, 1, at, base, ReduceOp.SUM); // into memory
                    Buf arrayAcc = Buf.allocate(dt, n);
                    a[1].put(0, 0, intoArray); // from an array, reduced into memory and into an array
                    Buf memoryAcc = direct(dt, n, order);
                    a[0].reduce(1, 0, 0, memoryAcc, ReduceOp.SUM);
                    a[0].reduce(1, 0, 0, arrayAcc, ReduceOp.SUM);
                    for (int i = 0; i < n; i++) {
                        double v = i % 1000 - 500;
                        assertEquals(v, get(intoMemory, i + 2), 0, what + ": get into memory, element " + i);
                        assertEquals(v, get(intoArray, i), 0, what + ": get into an array, element " + i);
                        assertEquals(v + 7 * (i % 13), get(base, i), 0, what + ": reduce into memory, element " + i);
                        assertEquals(v, get(memoryAcc, i), 0, what + ": reduce of an array's put, element " + i);
                        assertEquals(v, get(arrayAcc, i), 0, what + ": reduce into an array, element " + i);
                    }
                }
            }
        }
    }

    private static SharedArena[] arenas(String kind, Path dir, java.util.List<Transport> open) {
        if (kind.equals("threads")) {
            QueueMesh mesh = QueueMesh.create(2, ARENA_BYTES);
            open.add(mesh.endpoint(0));
            open.add(mesh.endpoint(1));
            return new SharedArena[] {open.get(0).arena(), open.get(1).arena()};
        }
        InMemoryStore store = new InMemoryStore();
        @SuppressWarnings({"unchecked", "rawtypes"})
        CompletableFuture<ShmTransport>[] f = new CompletableFuture[2];
        for (int r = 0; r < 2; r++) {
            int rank = r;
            // a thread each: they wait for each other while connecting (the common pool may have one thread)
            f[r] = CompletableFuture.supplyAsync(() -> ShmTransport.connect(rank, 2, store, dir, 4096, ARENA_BYTES,
                    8192, Duration.ofSeconds(20)), task -> {
                        Thread t = new Thread(task, "arena-buffers-connect-" + rank);
                        t.setDaemon(true);
                        t.start();
                    });
        }
        open.add(f[0].join());
        open.add(f[1].join());
        return new SharedArena[] {open.get(0).arena(), open.get(1).arena()};
    }

    private static Buf direct(DataType dt, int n, ByteOrder order) {
        return Buf.over(dt, ByteBuffer.allocateDirect(n * dt.sizeBytes()).order(order), 0, n);
    }

    private static void set(Buf b, int i, double v) {
        ByteBuffer m = b.memory();
        int at = (b.offset() + i) * b.dtype().sizeBytes();
        switch (b.dtype()) {
            case FLOAT32: m.putFloat(at, (float) v); break;
            case FLOAT64: m.putDouble(at, v); break;
            case INT32: m.putInt(at, (int) v); break;
            default: throw new AssertionError(b.dtype());
        }
    }

    private static double get(Buf b, int i) {
        if (!b.isMemory()) {
            Object x = b.array();
            int k = b.offset() + i;
            return x instanceof float[] ? ((float[]) x)[k] : x instanceof double[] ? ((double[]) x)[k] : ((int[]) x)[k];
        }
        ByteBuffer m = b.memory();
        int at = (b.offset() + i) * b.dtype().sizeBytes();
        switch (b.dtype()) {
            case FLOAT32: return m.getFloat(at);
            case FLOAT64: return m.getDouble(at);
            case INT32: return m.getInt(at);
            default: throw new AssertionError(b.dtype());
        }
    }
}
