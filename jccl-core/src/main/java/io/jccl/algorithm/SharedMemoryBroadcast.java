package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;
import io.jccl.transport.SharedArena;

/**
 * Broadcast through memory every rank can read ({@link SharedArena}), in eager rounds: the root copies a round into
 * its exchange buffer, publishes its arrival and goes on; every other rank waits for the root alone, checks the
 * root's signature and copies the round out. A rank whose call differs from the root's fails at once; a rank that
 * takes itself for the root while the others do not is found when the ranks next settle (before the next round, or
 * at their next shared-memory call; on one host AUTO picks shared memory for every small collective). Up to
 * {@link #PIPELINED_BYTES} a call is one round; above, rounds of about a quarter of the call ({@link #roundBytes},
 * at most one exchange buffer), so that the others copy one round out while the root copies the next one in. A rank
 * writes a round's half only after every rank has arrived at the round before, that is after each has copied out
 * what that half held. Ranks that are threads read the root's buffer in place instead. Cost:
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
     * Broadcasts above this go in several eager rounds even when one exchange buffer would hold them, so that the
     * others copy round j out while the root copies round j + 1 in: a call takes about one copy of T and a round's
     * share of the other, where one round takes two copies one after the other.
     */
    static final int PIPELINED_BYTES = 256 << 10;

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
        long bytes = (long) n * elem;
        // every round eager: the root writes it and goes on, the others wait for the root alone and copy it out
        int per = bytes <= Math.min(a.bufferBytes(), PIPELINED_BYTES) ? n
                : Math.max(1, roundBytes(bytes, a.bufferBytes()) / elem);
        int start = 0;
        do { // at least one round: a call of no elements still compares signatures
            int m = Math.min(per, n - start);
            Buf piece = m == n ? data : data.slice(start, m);
            // settles the round before: every rank has arrived there, so no rank still reads what this round's half
            // held two rounds ago (a rank arrives at a round after it has copied out the one before)
            long round = SharedRounds.begin(call, a);
            int half = (int) (round & 1);
            if (isRoot) {
                a.put(half, 0, piece);
            }
            call.arriveEagerly(a, round, root);
            if (!isRoot) {
                a.get(root, half, 0, piece);
            }
            call.countShared(isRoot ? (long) m * elem : 0, isRoot ? 0 : (long) m * elem);
            start += Math.max(1, m);
        } while (start < n);
    }
}
