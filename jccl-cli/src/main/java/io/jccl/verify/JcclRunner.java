package io.jccl.verify;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.Jccl;
import io.jccl.OpType;
import io.jccl.Tensor;
import io.jccl.buffer.Buf;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Runs verification cases on jccl, ranks as threads over the in-process queue mesh. */
public final class JcclRunner implements CaseRunner {
    private final int world;
    private final Algorithm algorithm;
    private final CommunicatorConfig config;
    private final ExecutorService pool;

    public JcclRunner(int world, Algorithm algorithm, Duration timeout) {
        this.world = world;
        this.algorithm = algorithm;
        this.config = CommunicatorConfig.fromEnvironment().withTimeout(timeout);
        this.pool = Executors.newFixedThreadPool(world, r -> {
            Thread t = new Thread(r, "jccl-verify-rank");
            t.setDaemon(true);
            return t;
        });
    }

    @Override
    public void runAll(List<VerifyCase> cases, OutcomeSink sink) throws InterruptedException, java.io.IOException {
        for (VerifyCase c : cases) {
            sink.accept(c, run(c));
        }
    }

    @Override
    public List<TrafficLaw.Row> traffic(int count) {
        return TrafficLaw.measure(world, count, algorithm);
    }

    /**
     * The algorithm a case runs with: AUTO (the communicator's cost model chooses), else the requested one where
     * the primitive has it, else the primitive's message-passing default.
     */
    public static Algorithm algorithmFor(Algorithm algorithm, OpType op) {
        return algorithm == Algorithm.AUTO || Algorithm.available(op).contains(algorithm) ? algorithm
                : Algorithm.resolve(op, Algorithm.AUTO);
    }

    public Outcome run(VerifyCase c) throws InterruptedException {
        List<Communicator> comms = Jccl.inProcess(world, config);
        Algorithm algo = algorithmFor(algorithm, c.primitive());
        CollectiveOptions opts = CollectiveOptions.DEFAULT.withAlgorithm(algo);
        List<Future<Buf>> futures = new ArrayList<>();
        for (Communicator comm : comms) {
            futures.add(pool.submit(() -> runRank(comm, c, opts)));
        }
        List<Buf> outputs = new ArrayList<>();
        Throwable error = null;
        for (Future<Buf> f : futures) {
            try {
                outputs.add(f.get(config.timeout().toMillis() * 2, TimeUnit.MILLISECONDS));
            } catch (ExecutionException e) {
                outputs.add(null);
                if (error == null) {
                    error = e.getCause();
                }
            } catch (TimeoutException e) {
                outputs.add(null);
                if (error == null) {
                    error = e;
                }
            }
        }
        for (Communicator comm : comms) {
            comm.close();
        }
        return new Outcome(outputs, error, algo.name());
    }

    private static Tensor t(Buf b) {
        return Tensor.ofArray(b.dtype(), b.array(), b.offset(), b.count());
    }

    /** Rank {@code comm.rank()}'s part of case {@code c}; returns its output (null where it has none). */
    static Buf runRank(Communicator comm, VerifyCase c, CollectiveOptions o) {
        int r = comm.rank();
        int root = c.root();
        Buf in = c.input(r);
        switch (c.primitive()) {
            case ALL_REDUCE:
                comm.allReduce(t(in), c.op(), o);
                return in;
            case BROADCAST:
                comm.broadcast(t(in), root, o);
                return in;
            case ALL_GATHER: {
                Buf out = Buf.allocate(c.dtype(), c.outputCount());
                comm.allGather(t(in), t(out), o);
                return out;
            }
            case REDUCE_SCATTER: {
                Buf out = Buf.allocate(c.dtype(), c.outputCount());
                comm.reduceScatter(t(in), t(out), c.op(), o);
                return out;
            }
            case REDUCE:
                comm.reduce(t(in), root, c.op(), o);
                return r == root ? in : null;
            case GATHER: {
                Buf out = r == root ? Buf.allocate(c.dtype(), c.outputCount()) : null;
                comm.gather(t(in), out == null ? null : t(out), root, o);
                return out;
            }
            case SCATTER: {
                Buf out = Buf.allocate(c.dtype(), c.outputCount());
                comm.scatter(r == root ? t(in) : null, t(out), root, o);
                return out;
            }
            case ALL_TO_ALL: {
                Buf out = Buf.allocate(c.dtype(), c.outputCount());
                comm.allToAll(t(in), t(out), o);
                return out;
            }
            default:
                throw new AssertionError(c.primitive());
        }
    }

    @Override
    public void close() {
        pool.shutdownNow();
    }
}
