package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;
import io.jccl.transport.SharedArena;

/**
 * Reduce-scatter through memory every rank can read ({@link SharedArena}): the input holds P blocks of m elements;
 * in rounds of c elements of every block (P c at most one exchange buffer), every rank copies those P pieces
 * into its own buffer (piece q at q c), arrives (the first round compares signatures), and reduces piece r of
 * every rank's buffer into its output, in rank order (the round loop of {@code SharedRounds}). Cost:
 * {@link #predictMicros}: the ring's totals without its P-1 steps. Every element is reduced in rank order, so float
 * results agree with gloo within the bound of docs/verification.md.
 */
public final class SharedMemoryReduceScatter extends SharedMemoryAlgorithm {
    @Override
    public OpType operation() {
        return OpType.REDUCE_SCATTER;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        reduceScatter(call, operands.input(), operands.output(), operands.reduceOp());
    }

    /**
     * One synchronisation per round; every rank writes T bytes and reads T(P-1)/P (T = input bytes, P times the
     * output).
     */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        t *= p;
        return arenaMicros(topology, arena, rounds(t, topology), t + t * (p - 1) / p);
    }

    public static void reduceScatter(CollectiveCall call, Buf input, Buf output, ReduceOp op) {
        SharedArena a = call.arena();
        int p = call.size();
        int me = call.rank();
        int elem = input.dtype().sizeBytes();
        int m = output.count();
        if (a.canExpose() && (long) m * p * elem > SharedMemoryAllReduce.SMALL_BYTES) {
            // threads: reduce this rank's block reading every rank's input in place
            SharedRounds.inPlace(call, a, input, round -> {
                // into a scratch buffer first: the output may be this rank's own block of the input (in place)
                Buf acc = call.scratch(output.dtype(), m);
                SharedRounds.reduceRange(a, SharedArena.EXPOSED, me * m, acc, op, p);
                acc.copyTo(output, 0);
                call.releaseScratch(acc);
            });
            call.countShared(0, (long) m * (p - 1) * elem);
            return;
        }
        if ((long) m * p * elem <= a.bufferBytes()) { // one round, without run's callbacks: the whole input
            long round = SharedRounds.begin(call, a);
            int half = (int) (round & 1);
            a.put(half, 0, input);
            call.arrive(a, round, true);
            read(call, a, half, output, op, me, p, m);
            return;
        }
        // a round takes c elements of every one of the P blocks: P c fill one exchange buffer
        SharedRounds.run(call, a, m, a.bufferBytes() / elem / p, (half, start, c) -> {
            for (int q = 0; q < p; q++) {
                a.put(half, q * c, input.slice(q * m + start, c));
            }
        }, (round, half, start, c) -> read(call, a, half, output.slice(start, c), op, me, p, c));
    }

    /** A round's read: piece {@code me} (c elements) of every rank's buffer {@code half}, reduced into {@code out}. */
    private static void read(CollectiveCall call, SharedArena a, int half, Buf out, ReduceOp op, int me, int p,
                             int c) {
        SharedRounds.reduceRange(a, half, me * c, out, op, p);
        int elem = out.dtype().sizeBytes();
        call.countShared((long) c * p * elem, (long) c * (p - 1) * elem);
    }
}
