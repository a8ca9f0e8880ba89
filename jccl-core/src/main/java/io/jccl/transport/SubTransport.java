package io.jccl.transport;

import io.jccl.DataType;

/**
 * A sub-group's view of a parent transport: ranks renumbered 0..k-1, frames carried by the parent's links on
 * the sub-communicator's own streams. The parent keeps ownership of the links; closing a sub-transport releases
 * nothing.
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

    @Override
    public void send(int dst, FrameHeader header, io.jccl.buffer.Buf payload) {
        parent.send(members[dst], header.withSource(members[header.source()]), payload);
    }

    @Override
    public boolean send(int dst, FrameHeader header, io.jccl.buffer.Buf payload, long deadlineNanos) {
        return parent.send(members[dst], header.withSource(members[header.source()]), payload, deadlineNanos);
    }

    private FrameHeader toChild(FrameHeader h) {
        int src = h.source();
        return src >= 0 && src < childOf.length && childOf[src] >= 0 ? h.withSource(childOf[src]) : h;
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
        parent.release(frame);
    }

    @Override
    public void abortPeers(int[] peers, FrameHeader header, String reason) {
        int[] mapped = new int[peers.length];
        for (int i = 0; i < peers.length; i++) {
            mapped[i] = members[peers[i]];
        }
        parent.abortPeers(mapped, header.withSource(members[header.source()]), reason);
    }

    @Override
    public void interrupt(Frame abort) {
        parent.interrupt(new Frame(abort.header().withSource(members[abort.header().source()]), abort.payload()));
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
