package io.jccl.algorithm;

import io.jccl.Algorithm;
import io.jccl.OpType;
import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Ring reduce_scatter whose every output element equals, bit for bit, the same element of {@link RingAllReduce}
 * (and so of gloo's allreduce) on the same input.
 *
 * <p>Pass 1 is the reduce-scatter pass of the ring allreduce over gloo's chunks ({@link GlooChunking}): P-1
 * steps, rank r ends holding gloo chunk r. Pass 2 moves the parts of gloo chunk r that fall in another rank's
 * output block {@code [b*C, (b+1)*C)} to that rank, in pairwise steps (to r+s, from r-s) that are skipped when
 * both sides know the part is empty. When gloo's chunks coincide with the output blocks (C even below 2P MiB, and
 * most power-of-two sizes above) pass 2 moves nothing.
 *
 * <p>Cost: {@link #predictMicros}, plus the misaligned boundary elements of pass 2, at most a few per neighbour
 * below 2P MiB. The input is not modified.
 */
public final class RingReduceScatter implements CollectiveAlgorithm {
    @Override
    public OpType operation() {
        return OpType.REDUCE_SCATTER;
    }

    @Override
    public Algorithm algorithm() {
        return Algorithm.RING;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        reduceScatter(call, operands.input(), operands.output(), operands.reduceOp());
    }

    /** P-1 ring steps; T(P-1)/P bytes sent per rank (T = input bytes, P times the output). */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        int p = topology.world();
        double t = bytes;
        t *= p;
        return messages.micros(p - 1, t * (p - 1) / p);
    }

    public static void reduceScatter(CollectiveCall call, Buf input, Buf output, ReduceOp op) {
        int p = call.size();
        int r = call.rank();
        int block = output.count();
        if (p == 1) {
            input.copyTo(output, 0);
            return;
        }
        // the ring reads the input once, reducing each received piece with it into the scratch buffer (no copy of
        // the whole input first: 64 MiB per call at 64 MiB)
        Buf work = call.scratchLike(input, input.count());
        int[] bounds = GlooChunking.bounds(work.count(), work.dtype().sizeBytes(), p);
        RingAllReduce.reduceScatterPhase(call, input, work, op, bounds);
        // pass 2: redistribute gloo chunk r over the output blocks
        copyOverlap(work, bounds[r], bounds[r + 1], r, block, output);
        for (int s = 1; s < p; s++) {
            int to = (r + s) % p;
            int from = (r - s + p) % p;
            call.step(p - 1 + s - 1, "redistribute");
            int sendLo = Math.max(bounds[r], to * block);
            int sendHi = Math.min(bounds[r + 1], (to + 1) * block);
            if (sendHi > sendLo) {
                call.send(to, work.slice(sendLo, sendHi - sendLo));
            }
            int recvLo = Math.max(bounds[from], r * block);
            int recvHi = Math.min(bounds[from + 1], (r + 1) * block);
            if (recvHi > recvLo) {
                call.recvInto(from, output.slice(recvLo - r * block, recvHi - recvLo));
            }
        }
        call.releaseScratch(work);
    }

    private static void copyOverlap(Buf work, int lo, int hi, int r, int block, Buf output) {
        int a = Math.max(lo, r * block);
        int b = Math.min(hi, (r + 1) * block);
        if (b > a) {
            work.copyTo(a, output, a - r * block, b - a);
        }
    }
}
