package io.jccl.transport;

import io.jccl.DataType;

/**
 * A sub-group's view of a parent transport: ranks renumbered 0..k-1, frames carried by the parent's links on
 * the sub-communicator's own streams. The parent keeps ownership of the links; closing a sub-transport releases
 * nothing.
 *
 * <p>A frame whose source is a process outside the group (an abort it relayed, a peer the parent lost) carries
 * {@code size() + } its world rank as its source ({@link #outsiderWorldRank}), as {@code HybridTransport} carries a
 * rank of another host on its local transport: its parent rank would be some member's number here, and every rank
 * of the group would blame that live member.
 */
public final class SubTransport implements Transport {
    private final Transport parent;
    private final int[] members;
    private final int[] childOf;
    private final int rank;

    /**
     * @param members the parent rank of each child rank, in child-rank order
     * @param rank    this process's child rank
     */
    public SubTransport(Transport parent, int[] members, int rank) {
        this.parent = parent;
        this.members = members.clone();
        this.rank = rank;
        this.childOf = new int[parent.size()];
        java.util.Arrays.fill(childOf, -1);
        for (int i = 0; i < members.length; i++) {
            childOf[members[i]] = i;
        }
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return members.length;
    }

    @Override
    public String name() {
        return parent.name();
    }

    /** The parent's rank of child rank {@code child}. */
    public int parentRank(int child) {
        return members[child];
    }

    /** The transport at the root of the sub-transports: the world's. */
    public Transport root() {
        return parent instanceof SubTransport ? ((SubTransport) parent).root() : parent;
    }

    /** The rank of child rank {@code child} in the transport at the root of the sub-transports. */
    public int worldRank(int child) {
        int r = members[child];
        return parent instanceof SubTransport ? ((SubTransport) parent).worldRank(r) : r;
    }

    /** The parent's hosts of the members, renumbered 0, 1, ... in the order of their lowest child rank. */
    @Override
    public int[] hostOf() {
        int[] parentHosts = parent.hostOf();
        if (parentHosts == null) {
            return null;
        }
        int[] hosts = new int[members.length];
        java.util.Map<Integer, Integer> renumbered = new java.util.HashMap<>();
        for (int i = 0; i < members.length; i++) {
            hosts[i] = renumbered.computeIfAbsent(parentHosts[members[i]], h -> renumbered.size());
        }
        return hosts;
    }

    /**
     * The world rank of the process that a frame's {@code source} names when it is not in this group (a source of
     * {@code size()} and up), or -1 when it is a member's rank.
     */
    public int outsiderWorldRank(int source) {
        return source >= members.length ? source - members.length : -1;
    }

    /** The source that names world rank {@code worldRank}, a process outside this group, in this group's frames. */
    public int outsiderSource(int worldRank) {
        return members.length + worldRank;
    }

    /** The rank of {@code parentRank} at the root of the sub-transports. */
    private int parentWorldRank(int parentRank) {
        return parent instanceof SubTransport ? ((SubTransport) parent).worldRank(parentRank) : parentRank;
    }

    /** The source naming world rank {@code worldRank} here: a member's child rank, else {@link #outsiderSource}. */
    private int fromWorld(int worldRank) {
        for (int i = 0; i < members.length; i++) {
            if (worldRank(i) == worldRank) {
                return i;
            }
        }
        return outsiderSource(worldRank);
    }

    /** The source of a parent's frame in this group's numbering: a member's child rank, or an outsider's. */
    private int toChildSource(int src) {
        if (src >= 0 && src < childOf.length) {
            return childOf[src] >= 0 ? childOf[src] : outsiderSource(parentWorldRank(src));
        }
        if (parent instanceof SubTransport && src >= childOf.length) { // outside the parent's group too
            return outsiderSource(((SubTransport) parent).outsiderWorldRank(src));
        }
        return src;
    }

    /** The source of this group's frame in the parent's numbering (see {@link #toChildSource}). */
    private int toParentSource(int src) {
        if (src >= 0 && src < members.length) {
            return members[src];
        }
        int world = outsiderWorldRank(src);
        if (world < 0) {
            return src;
        }
        return parent instanceof SubTransport ? ((SubTransport) parent).fromWorld(world) : world;
    }

    @Override
    public void send(int dst, FrameHeader header, io.jccl.buffer.Buf payload) {
        try {
            parent.send(members[dst], header.withSource(toParentSource(header.source())), payload);
        } catch (PeerLostException e) { // the parent names its peers in its own numbering
            throw new PeerLostException(toChildSource(e.peer()), e.getMessage(), e);
        }
    }

    @Override
    public boolean send(int dst, FrameHeader header, io.jccl.buffer.Buf payload, long deadlineNanos) {
        try {
            return parent.send(members[dst], header.withSource(toParentSource(header.source())), payload,
                    deadlineNanos);
        } catch (PeerLostException e) {
            throw new PeerLostException(toChildSource(e.peer()), e.getMessage(), e);
        }
    }

    private FrameHeader toChild(FrameHeader h) {
        return h.withSource(toChildSource(h.source()));
    }

    @Override
    public Frame receive(int src, int stream, long deadlineNanos) throws InterruptedException {
        Frame f = parent.receive(members[src], stream, deadlineNanos);
        return f == null ? null : f.withHeader(toChild(f.header()));
    }

    @Override
    public void post(int src, int stream, PostedReceive posted) {
        parent.post(members[src], stream, posted);
    }

    @Override
    public Frame receive(int src, int stream, long deadlineNanos, PostedReceive posted) throws InterruptedException {
        Frame f = parent.receive(members[src], stream, deadlineNanos, posted);
        return f == null ? null : f.withHeader(toChild(f.header()));
    }

    @Override
    public Frame pendingAbort(int src, int stream) {
        Frame f = parent.pendingAbort(members[src], stream);
        return f == null ? null : f.withHeader(toChild(f.header()));
    }

    @Override
    public FrameHeader peekHeader(int src, int stream) {
        FrameHeader h = parent.peekHeader(members[src], stream);
        return h == null ? null : toChild(h);
    }

    @Override
    public void release(Frame frame) {
        // in the parent's numbering, by which a transport of two parts (HybridTransport) finds the pool it came from
        parent.release(frame.header().isAbort() ? frame
                : frame.withHeader(frame.header().withSource(toParentSource(frame.header().source()))));
    }

    @Override
    public void abortPeers(int[] peers, FrameHeader header, String reason) {
        int[] mapped = new int[peers.length];
        for (int i = 0; i < peers.length; i++) {
            mapped[i] = members[peers[i]];
        }
        parent.abortPeers(mapped, header.withSource(toParentSource(header.source())), reason);
    }

    @Override
    public void interrupt(Frame abort) {
        parent.interrupt(new Frame(abort.header().withSource(toParentSource(abort.header().source())),
                abort.payload()));
    }

    @Override
    public void forget(int communicatorId) {
        parent.forget(communicatorId);
    }

    @Override
    public void close() {
        // the parent owns the links
    }
}
