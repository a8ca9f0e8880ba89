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

    SubGroups(Communicator parent, Transport transport, int communicatorId, CommunicatorConfig config,
              TraceWriter trace) {
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
                childId(communicatorId, splitIndex, color), config, trace);
    }

    /** A 30-bit id for a child, the same on every member; distinct from its parent's and siblings' ids. */
    static int childId(int parentId, int splitIndex, int color) {
        long h = parentId * 0x9E3779B97F4A7C15L + (splitIndex + 1) * 0xC2B2AE3D27D4EB4FL + (color + 1) * 0x165667B19E3779F9L;
        h ^= h >>> 31;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 29;
        int id = (int) (h & 0x3FFFFFFF);
        return id == 0 || id == parentId ? id + 1 : id;
    }
}
