package io.jccl.pipeline;

import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.Tensor;
import io.jccl.instrument.TraceWriter;
import io.jccl.transport.SubTransport;
import io.jccl.transport.Transport;

import java.util.Comparator;
import java.util.stream.IntStream;

/**
 * {@code split} with MPI semantics: every rank contributes its color and key through an allgather of the parent;
 * the ranks of one color form a sub-group ordered by key (then parent rank), over a {@link SubTransport} of the
 * parent's links, with a communicator id every member derives alike ({@link #childId}).
 */
final class SubGroups {
    private final Communicator parent;
    private final Transport transport;
    private final int communicatorId;
    private final CommunicatorConfig config;
    private final TraceWriter trace;
    /** Splits so far; guarded by {@code this}. */
    private int splits;

    private final Diagnostics diagnostics;

    SubGroups(Communicator parent, Transport transport, int communicatorId, CommunicatorConfig config,
              TraceWriter trace, Diagnostics diagnostics) {
        this.diagnostics = diagnostics;
        this.parent = parent;
        this.transport = transport;
        this.communicatorId = communicatorId;
        this.config = config;
        this.trace = trace;
    }

    Communicator split(int color, int key) {
        if (color < Communicator.UNDEFINED) {
            throw new IllegalArgumentException("split: color must be >= 0 or UNDEFINED (-1), got " + color);
        }
        int p = transport.size();
        int[] mine = {color, key};
        int[] all = new int[2 * p];
        parent.allGather(Tensor.of(mine), Tensor.of(all));
        int splitIndex;
        synchronized (this) {
            splitIndex = splits++;
        }
        if (color == Communicator.UNDEFINED) {
            return null;
        }
        Integer[] members = IntStream.range(0, p).filter(r -> all[2 * r] == color).boxed()
                .sorted(Comparator.<Integer>comparingInt(r -> all[2 * r + 1]).thenComparingInt(r -> r))
                .toArray(Integer[]::new);
        int[] parentRanks = new int[members.length];
        int childRank = -1;
        for (int i = 0; i < members.length; i++) {
            parentRanks[i] = members[i];
            if (members[i] == transport.rank()) {
                childRank = i;
            }
        }
        return new DefaultCommunicator(new SubTransport(transport, parentRanks, childRank),
                childId(communicatorId, splitIndex, color), config, trace, diagnostics);
    }

    /**
     * torch's {@code new_group}: the ranks {@code ranks} (any order, no repeats) in increasing order, as a
     * {@link #split} in which they take one color and every other rank none. Every rank first shares a digest of
     * its list, so that lists that differ fail on every rank, naming the first rank whose list is not rank 0's.
     */
    Communicator newGroup(int[] ranks) {
        java.util.Objects.requireNonNull(ranks, "ranks");
        int p = transport.size();
        int[] sorted = ranks.clone();
        java.util.Arrays.sort(sorted);
        for (int i = 0; i < sorted.length; i++) {
            if (sorted[i] < 0 || sorted[i] >= p) {
                throw new IllegalArgumentException("newGroup: rank " + sorted[i] + " is not a rank of this "
                        + "communicator of " + p + ": ranks are 0 to " + (p - 1));
            }
            if (i > 0 && sorted[i] == sorted[i - 1]) {
                throw new IllegalArgumentException("newGroup: rank " + sorted[i] + " is listed twice in "
                        + java.util.Arrays.toString(ranks));
            }
        }
        if (sorted.length == 0) {
            throw new IllegalArgumentException("newGroup: no ranks given");
        }
        long digest = java.util.Arrays.hashCode(sorted) * 0x9E3779B97F4A7C15L + sorted.length;
        long[] all = new long[p];
        parent.allGather(Tensor.of(new long[] {digest}), Tensor.of(all));
        for (int r = 1; r < p; r++) {
            if (all[r] != all[0]) {
                throw new io.jccl.JcclException(transport.rank(), io.jccl.OpType.ALL_GATHER, -1, "newGroup: rank "
                        + r + " passed other ranks than rank 0 (every rank must pass the same list; this rank "
                        + transport.rank() + " passed " + java.util.Arrays.toString(sorted) + ")", null);
            }
        }
        boolean member = java.util.Arrays.binarySearch(sorted, transport.rank()) >= 0;
        return split(member ? 0 : Communicator.UNDEFINED, transport.rank());
    }

    /** A 30-bit id for a child, the same on every member; distinct from its parent's and siblings' ids. */
    static int childId(int parentId, int splitIndex, int color) {
        long h = parentId * 0x9E3779B97F4A7C15L + (splitIndex + 1) * 0xC2B2AE3D27D4EB4FL + (color + 1) * 0x165667B19E3779F9L;
        h ^= h >>> 31;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 29;
        int id = (int) (h & 0x3FFFFFFF);
        if (id == DefaultCommunicator.BOOTSTRAP_ID || id == io.jccl.step.ProgressExchange.CONTROL_ID) {
            id = 1;
        }
        return id == 0 || id == parentId ? id + 1 : id;
    }
}
