package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;
import io.jccl.transport.SharedArena;

/**
 * Allgather through memory every rank can read ({@link SharedArena}): in rounds of at most one exchange buffer of
 * each rank's input, every rank copies its part into its own buffer, arrives (the first round compares
 * signatures), and copies every other rank's part into its output (the round loop of {@code SharedRounds}).
 * Cost: {@link #predictMicros}: the ring's totals without its P-1 steps.
 */
public final class SharedMemoryAllGather extends SharedMemoryAlgorithm {
    @Override
    public OpType operation() {
        return OpType.ALL_GATHER;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        allGather(call, operands.input(), operands.output());
    }

    /**
     * One synchronisation per round of the input; every rank writes T/P bytes and reads T(P-1)/P (T = output
     * bytes, P times the input): T copied in all.
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        t *= p;
        return arenaMicros(topology, arena, rounds(t / p, topology), t);
    }

    public static void allGather(CollectiveCall call, Buf input, Buf output) {
        SharedArena a = call.arena();
        int p = call.size();
        int me = call.rank();
        int elem = input.dtype().sizeBytes();
        int n = input.count();
        if (a.canExpose() && (long) n * elem * p > SharedMemoryAllReduce.SMALL_BYTES) {
            // threads: read every rank's input in place, then wait until nobody reads this rank's any more
            SharedRounds.inPlace(call, a, input, round -> {
                for (int r = 0; r < p; r++) {
                    a.get(r, SharedArena.EXPOSED, 0, output.slice(r * n, n));
                }
            });
            call.countShared(0, (long) n * elem * (p - 1));
            return;
        }
        if ((long) n * elem <= a.bufferBytes()) { // one round, without run's callbacks
            long round = SharedRounds.begin(call, a);
            int half = (int) (round & 1);
            publish(a, half, input, output, me, 0, n);
            call.arrive(a, round, true);
            read(call, a, half, output, me, p, n, 0, n);
            return;
        }
        SharedRounds.run(call, a, n, a.bufferBytes() / elem, (half, start, m) -> publish(a, half, input, output, me,
                start, m), (round, half, start, m) -> read(call, a, half, output, me, p, n, start, m));
    }

    /** A round's publish: elements {@code [start, start + m)} of the input into buffer {@code half} and the output. */
    private static void publish(SharedArena a, int half, Buf input, Buf output, int me, int start, int m) {
        int piece = FUSED_BYTES / input.dtype().sizeBytes();
        if ((long) m * input.dtype().sizeBytes() < UNCACHED_BYTES) {
            a.put(half, 0, start == 0 && m == input.count() ? input : input.slice(start, m));
            input.copyTo(start, output, me * input.count() + start, m);
            return;
        }
        for (int done = 0; done < m; done += piece) { // each piece read once from memory, copied twice from the cache
            int k = Math.min(piece, m - done);
            a.put(half, done, input.slice(start + done, k));
            input.copyTo(start + done, output, me * input.count() + start + done, k);
        }
    }

    /**
     * Pieces in which {@link #publish} copies a round of {@link #UNCACHED_BYTES} or more of input into the exchange
     * buffer and the output together. Smaller rounds stay in the cache between the two copies, and go in one piece
     * each:
     * two ranks' allgather, one run of each build alternating three times, us: 1 MiB 92-94 whole against 96-107 in
     * pieces; 16 MiB 3,984-4,546 against 3,672-4,139; 64 MiB 16,251-17,517 against 14,249-15,243.
     */
    private static final int FUSED_BYTES = 64 << 10;

    /** Rounds of input from this size on are copied in {@link #FUSED_BYTES} pieces. */
    private static final int UNCACHED_BYTES = 2 << 20;

    /** A round's read: every peer's {@code m} elements into its block of the output, from {@code start}. */
    private static void read(CollectiveCall call, SharedArena a, int half, Buf output, int me, int p, int n, int start,
                             int m) {
        for (int r = 0; r < p; r++) {
            if (r != me) {
                a.get(r, half, 0, output, r * n + start, m);
            }
        }
        int elem = output.dtype().sizeBytes();
        call.countShared((long) m * elem, (long) m * elem * (p - 1));
    }
}
