package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;
import io.jccl.transport.SharedArena;

/**
 * Broadcast through memory every rank can read ({@link SharedArena}). A broadcast that fits one exchange buffer
 * is eager: the root copies its data into its buffer, publishes its arrival and returns; every other rank waits for
 * the root alone, checks the root's signature and copies the data out (a rank whose call differs from the root's
 * fails at once; a rank that takes itself for the root while the others do not is found when the ranks next settle, at their next
 * shared-memory call; on one host AUTO picks shared memory for every small collective), up to
 * {@link #PIPELINED_BYTES}. Larger broadcasts go in rounds ({@link #roundBytes}: about a quarter of the call, at most
 * one exchange buffer): the root copies a round into its buffer, every rank arrives (the first round compares
 * signatures), and every other rank copies the round out of the root's buffer while the root copies the next one in
 * (the round loop of {@code SharedRounds}). Cost:
 * {@link #predictMicros}, against the tree's T bytes per step over ceil(log2 P) steps.
 */
public final class SharedMemoryBroadcast extends SharedMemoryAlgorithm {
    @Override
    public OpType operation() {
        return OpType.BROADCAST;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        broadcast(call, operands.data(), operands.root());
    }

    /** One synchronisation per round; the root writes T bytes and every other rank reads T (T = buffer bytes). */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        double t = bytes;
        return arenaMicros(topology, arena, rounds(t, topology), t);
    }

    /**
     * Larger broadcasts go in several rounds even when one exchange buffer would hold them: the root copies round
     * j + 1 in while the others copy round j out, so a call takes about one copy of T and a round's share of the
     * other instead of two copies one after the other. In one eager round the others could only start once the root
     * had copied everything in.
     */
    static final int PIPELINED_BYTES = 128 << 10;

    /** Bytes per round of a broadcast of {@code bytes}: a quarter of it, at least 32 KiB, at most one buffer. */
    static int roundBytes(long bytes, int bufferBytes) {
        return (int) Math.min(bufferBytes, Math.max(32 << 10, bytes / 4));
    }

    public static void broadcast(CollectiveCall call, Buf data, int root) {
        SharedArena a = call.arena();
        int me = call.rank();
        int elem = data.dtype().sizeBytes();
        int n = data.count();
        if (a.canExpose() && (long) n * elem > SharedMemoryAllReduce.SMALL_BYTES) {
            // threads: read the root's buffer in place; the root waits until every rank has
            SharedRounds.inPlace(call, a, data, round -> {
                if (me != root) {
                    a.get(root, SharedArena.EXPOSED, 0, data);
                }
            });
            call.countShared(0, me == root ? 0 : (long) n * elem);
            return;
        }
        boolean isRoot = me == root;
        if ((long) n * elem <= Math.min(a.bufferBytes(), PIPELINED_BYTES)) {
            // one round: eager (the root writes and returns; the others wait for the root alone)
            long round = SharedRounds.begin(call, a);
            int half = (int) (round & 1);
            if (isRoot) {
                a.put(half, 0, data);
            }
            call.arriveEagerly(a, round, root);
            if (!isRoot) {
                a.get(root, half, 0, data);
            }
            call.countShared(isRoot ? (long) n * elem : 0, isRoot ? 0 : (long) n * elem);
            return;
        }
        SharedRounds.run(call, a, n, roundBytes(n * (long) elem, a.bufferBytes()) / elem, (half, start, m) -> {
            if (isRoot) {
                a.put(half, 0, data.slice(start, m));
            }
        }, (round, half, start, m) -> {
            if (!isRoot) {
                a.get(root, half, 0, data.slice(start, m));
            }
            call.countShared(isRoot ? (long) m * elem : 0, isRoot ? 0 : (long) m * elem);
        });
    }
}
