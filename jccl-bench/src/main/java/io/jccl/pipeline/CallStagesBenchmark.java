package io.jccl.pipeline;

import io.jccl.Algorithm;
import io.jccl.CollectiveOptions;
import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.DataType;
import io.jccl.Jccl;
import io.jccl.JcclSettings;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.Tensor;
import io.jccl.diag.FlightRecorder;
import io.jccl.instrument.Counter;
import io.jccl.instrument.TrafficCounters;
import io.jccl.step.Signature;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Streams;
import io.jccl.transport.local.QueueMesh;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What one small call costs, stage by stage, on one rank (so that no peer's scheduling is in the figure): the
 * whole call of a 4-byte allreduce through the pipeline, with the flight recorder on (2,000 entries, the default)
 * and off (0), and its stages alone: argument checks and algorithm choice (CallFactory), the choice alone, the
 * signature and its frame header, the counters, the flight recorder's part (the clock readings it uses are the
 * call's own), a clock reading. Run with {@code -prof gc} for
 * the bytes each allocates (docs/performance.md has the figures and the command).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class CallStagesBenchmark {
    /** The flight recorder's entries: 2,000 (the default) or 0 (off). */
    @Param({"2000", "0"})
    public int recorderEntries;

    private Communicator comm;
    private Tensor tensor;
    private CallFactory calls;
    private TrafficCounters counters;
    private FlightRecorder recorder;
    private FlightRecorder.Progress progress;
    private long seq;

    @Setup(Level.Trial)
    public void setUp() {
        CommunicatorConfig config = JcclSettings.from(Map.of("JCCL_FLIGHT_RECORDER_ENTRIES",
                Integer.toString(recorderEntries)), Map.of("java.io.tmpdir", System.getProperty("java.io.tmpdir")))
                .communicatorConfig();
        comm = Jccl.inProcess(1, config).get(0);
        tensor = Tensor.of(new float[1]);
        calls = new CallFactory(QueueMesh.create(1).endpoint(0), config);
        counters = new TrafficCounters();
        recorder = new FlightRecorder(0, recorderEntries);
        progress = recorder.progress(0, new int[] {0});
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        comm.close();
    }

    /** The whole call: validation, sequence, choice, turn, the algorithm (one rank), counters, recorder, trace. */
    @Benchmark
    public void allReduce4Bytes() {
        comm.allReduce(tensor, ReduceOp.SUM, CollectiveOptions.DEFAULT);
    }

    /** Argument checks, the algorithm's choice and the prepared call (CallFactory.allReduce), handed back. */
    @Benchmark
    public PreparedCall validateAndChoose() {
        PreparedCall p = calls.allReduce(tensor, ReduceOp.SUM, CollectiveOptions.DEFAULT);
        calls.release(p);
        return p;
    }

    /** AUTO's choice alone. */
    @Benchmark
    public Algorithm choose() {
        return calls.choose(OpType.ALL_REDUCE, DataType.FLOAT32, 1, Algorithm.AUTO);
    }

    /** The call's signature and the header of its first frame. */
    @Benchmark
    public FrameHeader signatureAndHeader() {
        return new Signature(OpType.ALL_REDUCE, seq++, DataType.FLOAT32, 1, -1, ReduceOp.SUM, Algorithm.RING)
                .header(FrameDescriptor.TYPE_DATA, 0, 0, 1, Streams.collective(0));
    }

    /** The per-call counters (calls, and bytes sent as an algorithm adds them). */
    @Benchmark
    public void counters() {
        counters.add(OpType.ALL_REDUCE, Counter.CALLS, 1);
        counters.add(OpType.ALL_REDUCE, Counter.BYTES_SENT, 4);
    }

    /** One {@code System.nanoTime()}: what a clock reading costs on this machine. */
    @Benchmark
    public long clock() {
        return System.nanoTime();
    }

    /** The flight recorder's part of one call: scheduled, started, completed. */
    @Benchmark
    public void flightRecorder() {
        long s = seq++;
        long id = recorder.scheduled(0, false, OpType.ALL_REDUCE, s, DataType.FLOAT32, 1, -1, Algorithm.RING, 1000,
                0);
        recorder.started(id, progress, s, s);
        recorder.completed(id, s + 1);
    }
}
