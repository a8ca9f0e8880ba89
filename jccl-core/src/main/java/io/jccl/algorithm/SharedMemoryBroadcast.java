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
 * shared-memory call; on one host AUTO picks shared memory for every small collective). Larger broadcasts go in rounds of at most one exchange buffer: the root copies a round
 * into its buffer, every rank arrives (the first round compares signatures), and every other rank copies the round
 * out of the root's buffer (the round loop of {@code SharedRounds}). Cost:
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
        if ((long) n * elem <= a.bufferBytes()) {
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
        SharedRounds.run(call, a, n, a.bufferBytes() / elem, (half, start, m) -> {
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
