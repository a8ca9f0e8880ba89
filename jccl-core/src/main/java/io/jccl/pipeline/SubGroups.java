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
    /**
     * Held by a split from its exchange until it has taken its index, so that splits take their indices in the
     * order of their exchanges, which is the order of their sequence numbers on every rank: taken after the
     * exchange, two threads' splits could take them in one order on one rank and in the other on another, and the
     * members of one group derive different ids (groups talked on each other's streams).
     */
    private final Object exchange = new Object();
    /** Splits so far; guarded by {@link #exchange}. */
    private int splits;
    /**
     * The sub-groups made so far, weakly (a program that makes one per step and drops it keeps nothing), so that
     * closing the parent closes them first: they run over its transport. Guarded by {@code this}.
     */
    private final java.util.List<java.lang.ref.WeakReference<Communicator>> children = new java.util.ArrayList<>();
    /** Set by {@link #closeAll}: a sub-group made later is closed at once. Guarded by {@code this}. */
    private boolean closed;

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
        int p = transport.size();
        int[] mine = {color, key};
        int[] all = new int[2 * p];
        int splitIndex;
        synchronized (exchange) {
            // a bad color is checked after the exchange, so that every rank fails naming the rank that gave it
            // (checked before, that rank alone failed and the others waited in the exchange until their deadline)
            exchange(Tensor.of(mine), Tensor.of(all), io.jccl.step.Signature.EXCHANGE_SPLIT);
            for (int r = 0; r < p; r++) {
                if (all[2 * r] < Communicator.UNDEFINED) {
                    String who = r == transport.rank() ? "this rank (" + r + ")" : "rank " + r;
                    throw new IllegalArgumentException("split: color must be >= 0 or UNDEFINED (-1); " + who
                            + " gave " + all[2 * r] + (r == transport.rank() ? "" : "; this rank "
                            + transport.rank() + " gave " + color));
                }
            }
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
        Communicator child = new DefaultCommunicator(new SubTransport(transport, parentRanks, childRank),
                childId(communicatorId, splitIndex, color), config, trace, diagnostics);
        boolean parentClosed;
        synchronized (this) {
            parentClosed = closed;
            if (!parentClosed) {
                children.removeIf(w -> w.get() == null);
                children.add(new java.lang.ref.WeakReference<>(child));
            }
        }
        if (parentClosed) { // the parent closed during the split, after closeAll had closed the others
            child.close();
        }
        return child;
    }

    /**
     * Closes every sub-group still open, before the parent closes its transport: their calls in flight end, and
     * later ones fail saying the communicator is closed, where over TCP they waited until their deadline or blamed
     * a live peer's process for a lost connection. Each is closed whatever closing another throws; then the first
     * failure is thrown, the others suppressed in it. A sub-group a split makes later is closed as it is made.
     */
    void closeAll() {
        java.util.List<Communicator> open = new java.util.ArrayList<>();
        synchronized (this) {
            closed = true;
            for (java.lang.ref.WeakReference<Communicator> w : children) {
                Communicator c = w.get();
                if (c != null) {
                    open.add(c);
                }
            }
            children.clear();
        }
        Throwable failure = null;
        for (Communicator c : open) { // each, whatever closing another throws; a second close does nothing
            failure = DefaultCommunicator.closing(failure, c::close);
        }
        DefaultCommunicator.throwIf(failure);
    }

    /**
     * torch's {@code new_group}: the ranks {@code ranks} (any order, no repeats) in increasing order, as a
     * {@link #split} in which they take one color and every other rank none. Every rank first shares what it found
     * wrong with its list (a rank out of range, a rank twice, none) and a SHA-256 digest of the sorted list, so that
     * a bad list or lists that differ fail on every rank at once, naming the first rank at fault, or the ranks whose
     * list differs from the one most ranks passed (a weak digest let {@code [0, 33]} and {@code [1, 2]} pass as the
     * same list: a group other than some ranks expected).
     */
    Communicator newGroup(int[] ranks) {
        java.util.Objects.requireNonNull(ranks, "ranks");
        int p = transport.size();
        int me = transport.rank();
        int[] sorted = ranks.clone();
        java.util.Arrays.sort(sorted);
        long[] mine = new long[GROUP_WORDS];
        if (sorted.length == 0) {
            mine[0] = NO_RANKS;
        }
        for (int i = 0; i < sorted.length && mine[0] == 0; i++) {
            if (sorted[i] < 0 || sorted[i] >= p) {
                mine[0] = OUT_OF_RANGE;
                mine[1] = sorted[i];
            } else if (i > 0 && sorted[i] == sorted[i - 1]) {
                mine[0] = TWICE;
                mine[1] = sorted[i];
            }
        }
        java.nio.ByteBuffer digest = java.nio.ByteBuffer.wrap(sha256(sorted));
        for (int i = 2; i < GROUP_WORDS; i++) {
            mine[i] = digest.getLong();
        }
        long[] all = new long[GROUP_WORDS * p];
        exchange(Tensor.of(mine), Tensor.of(all), io.jccl.step.Signature.EXCHANGE_NEW_GROUP);
        for (int r = 0; r < p; r++) {
            long what = all[GROUP_WORDS * r];
            if (what != 0) {
                String who = r == me ? "this rank (" + r + ")" : "rank " + r;
                String why = what == NO_RANKS ? "no ranks" : what == TWICE ? "rank " + all[GROUP_WORDS * r + 1]
                        + " twice" : "rank " + all[GROUP_WORDS * r + 1] + ", not a rank of this communicator of " + p
                        + " (ranks are 0 to " + (p - 1) + ")";
                throw new IllegalArgumentException("newGroup: " + who + " passed " + why
                        + (r == me ? ": " + java.util.Arrays.toString(ranks) : ""));
            }
        }
        // the ranks by the list they passed (keyed by the lowest rank that passed it); the most passed list (of the
        // lowest rank where counts tie) is taken for the one meant, and the ranks that passed another are named
        java.util.Map<Integer, java.util.List<Integer>> byList = new java.util.TreeMap<>();
        for (int r = 0; r < p; r++) {
            int first = 0;
            while (!java.util.Arrays.equals(all, GROUP_WORDS * r + 2, GROUP_WORDS * (r + 1),
                    all, GROUP_WORDS * first + 2, GROUP_WORDS * (first + 1))) {
                first++;
            }
            byList.computeIfAbsent(first, f -> new java.util.ArrayList<>()).add(r);
        }
        if (byList.size() > 1) {
            java.util.List<Integer> most = null;
            for (java.util.List<Integer> ranksOfList : byList.values()) {
                if (most == null || ranksOfList.size() > most.size()) {
                    most = ranksOfList;
                }
            }
            java.util.List<Integer> others = new java.util.ArrayList<>();
            for (int r = 0; r < p; r++) {
                if (!most.contains(r)) {
                    others.add(r);
                }
            }
            throw new io.jccl.JcclException(me, io.jccl.OpType.ALL_GATHER, -1, "newGroup: " + named(others)
                    + " passed other ranks than " + named(most) + " (every rank must pass the same list; this rank "
                    + me + " passed " + java.util.Arrays.toString(sorted) + ")", null);
        }
        boolean member = java.util.Arrays.binarySearch(sorted, me) >= 0;
        return split(member ? 0 : Communicator.UNDEFINED, me);
    }

    /** "rank 3", "ranks [1, 2]", or "the 32 ranks [0, 3, 4, 5, 6, 7, 8, 9, ...]" past eight. */
    private static String named(java.util.List<Integer> ranks) {
        if (ranks.size() == 1) {
            return "rank " + ranks.get(0);
        }
        if (ranks.size() <= 8) {
            return "ranks " + ranks;
        }
        String first = ranks.subList(0, 8).toString();
        return "the " + ranks.size() + " ranks " + first.substring(0, first.length() - 1) + ", ...]";
    }

    /** newGroup's exchange per rank: what is wrong with its list (0: nothing), the rank at fault, a 256-bit digest. */
    private static final int GROUP_WORDS = 6;
    private static final long OUT_OF_RANGE = 1;
    private static final long TWICE = 2;
    private static final long NO_RANKS = 3;

    private static byte[] sha256(int[] sorted) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4 * sorted.length);
        for (int r : sorted) {
            b.putInt(r);
        }
        try {
            return java.security.MessageDigest.getInstance("SHA-256").digest(b.array());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
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

    /**
     * An allgather of the parent's, tagged as {@code exchange} where the parent is jccl's own communicator (a parent
     * of another kind, such as {@code SubGroupsTest}'s stand-in, makes a plain one).
     */
    private void exchange(Tensor mine, Tensor all, int exchange) {
        if (parent instanceof DefaultCommunicator) {
            ((DefaultCommunicator) parent).exchange(mine, all, exchange);
        } else {
            parent.allGather(mine, all);
        }
    }
}
