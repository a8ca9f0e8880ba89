package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.Jccl;
import io.jccl.JcclSettings;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Back-to-back small shared-memory calls of two ranks that are threads of this JVM (the threads transport): what a
 * call costs when its peer is there, without the barrier that {@code jccl bench} puts before every call. JMH's
 * thread is rank 0; rank 1 is a thread of the benchmark's own that makes the same calls in a loop, so that it
 * simply waits, inside a call, between JMH's iterations; closing the communicators at the trial's end ends it. The
 * time is per call of rank 0; for broadcast rank 0 is the root (eager: it waits only for the peer to have arrived at
 * the call before, see {@code SharedRounds}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class TwoRanksBenchmark {
    private static final CollectiveOptions SHARED = CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.SHARED_MEMORY);

    /**
     * The call: a 4-byte allreduce, a 4-byte broadcast from rank 0, an allgather of 4 bytes per rank, a
     * reduce_scatter of 8 bytes in (4 out), a barrier, or {@code raw}: the floor, a barrier
     * of two counters and nothing else (each thread publishes its count and spins until the other's reaches it).
     */
    @Param({"allReduce", "broadcast", "allGather", "reduceScatter", "barrier", "raw"})
    public String call;

    /**
     * The ranks' transport: {@code threads} (the in-process arena), or {@code shm}: two shared-memory transports,
     * each with its own mapping of every segment, as two processes have (the same arena code; the process-wide
     * parts, such as the flight recorder's record id, are shared here and are not between processes).
     */
    @Param({"threads", "shm"})
    public String transport;

    private final java.util.concurrent.atomic.AtomicLongArray raw = new java.util.concurrent.atomic.AtomicLongArray(32);
    private final long[] rawCount = new long[2];

    private List<Communicator> comms;
    private Tensor tensor;
    private Tensor pair;
    private Thread peer;

    @Setup(Level.Trial)
    public void setUp() {
        CommunicatorConfig config = JcclSettings.from(Map.of(), Map.of("java.io.tmpdir",
                System.getProperty("java.io.tmpdir"))).communicatorConfig();
        comms = transport.equals("shm") ? shm(config) : Jccl.inProcess(2, config);
        tensor = Tensor.of(new float[1]);
        Tensor peerTensor = Tensor.of(new float[1]);
        pair = Tensor.of(new float[2]);
        Tensor peerPair = Tensor.of(new float[2]);
        peer = new Thread(() -> {
            try {
                while (true) {
                    run(comms.get(1), peerTensor, peerPair);
                }
            } catch (RuntimeException e) {
                // the communicators were closed: the trial is over
            }
        }, "two-ranks-peer");
        peer.setDaemon(true);
        peer.start();
    }

    /** Two communicators over shared-memory transports that meet through an in-memory store. */
    private static List<Communicator> shm(CommunicatorConfig config) {
        io.jccl.store.InMemoryStore store = new io.jccl.store.InMemoryStore();
        List<java.util.concurrent.CompletableFuture<io.jccl.transport.Transport>> ts = new java.util.ArrayList<>();
        for (int r = 0; r < 2; r++) {
            int rank = r;
            ts.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> io.jccl.transport.shm.ShmTransport.connect(
                    rank, 2, store, io.jccl.transport.shm.ShmTransport.defaultDirectory(), 64 << 10, 1 << 20, 16 << 20,
                    java.time.Duration.ofSeconds(30))));
        }
        List<Communicator> out = new java.util.ArrayList<>();
        for (java.util.concurrent.CompletableFuture<io.jccl.transport.Transport> t : ts) {
            out.add(new DefaultCommunicator(t.join(), config));
        }
        return out;
    }

    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        comms.forEach(Communicator::close);
        peer.join(10_000);
    }

    private void run(Communicator comm, Tensor t, Tensor two) {
        switch (call) {
            case "raw": {
                int me = comm.rank();
                long k = ++rawCount[me];
                raw.setRelease(me * 16, k); // a cache line apart
                while (raw.getAcquire((1 - me) * 16) < k) {
                    Thread.onSpinWait();
                }
                break;
            }
            case "allReduce":
                comm.allReduce(t, ReduceOp.SUM, SHARED);
                break;
            case "broadcast":
                comm.broadcast(t, 0, SHARED);
                break;
            case "allGather":
                comm.allGather(t, two, SHARED);
                break;
            case "reduceScatter":
                comm.reduceScatter(two, t, ReduceOp.SUM, SHARED);
                break;
            default:
                comm.barrier(SHARED);
        }
    }

    /** One call of rank 0. */
    @Benchmark
    public void call() {
        run(comms.get(0), tensor, pair);
    }
}
