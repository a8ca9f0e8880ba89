package io.jccl.transport.hybrid;

import io.jccl.DataType;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.PostedReceive;
import io.jccl.transport.Transport;

/**
 * One communicator over two transports, chosen per pair (as NCCL picks p2p, shm or net per pair): frames to a
 * rank that proved it shares this host's memory go over {@code local} (shared memory among this host's ranks,
 * numbered by their order in the world), every other frame over {@code remote} (TCP among all ranks).
 *
 * <p>A wait on a peer of one transport also watches the other for aborts (a rank on another host that fails
 * must stop a wait on a local peer at once, not at the deadline): waits run in slices of at most
 * {@link #WATCH_SLICE_NANOS}, and a shared-memory send waiting for room in a local peer's ring asks the remote
 * transport at each turn ({@code ShmTransport.watchOutsideAborts}). There is no shared arena of all ranks (the shared-memory algorithms need every rank
 * on one host); the local transport's arena is this host's ({@link #hostArena}), which the hierarchical algorithms'
 * phases within a host use.
 *
 * <p>A rank alone on its host in a job whose other hosts hold several ranks ({@link #alone}) has no local
 * transport; it is still a transport of this kind, so that it lays out and prices the job as its peers do (AUTO's
 * choice must be the same on every rank).
 */
public final class HybridTransport implements Transport {
    /** How often a wait on one transport looks at the other's aborts. */
    static final long WATCH_SLICE_NANOS = 5_000_000L;

    private final int rank;
    private final int size;
    /** Null for a rank alone on its host ({@link #alone}). */
    private final Transport local;
    /** The local transport's name: that of the other hosts' for a rank alone on its host. */
    private final String localName;
    private final Transport remote;
    /** World rank of each local rank. */
    private final int[] members;
    /** Local rank of each world rank, or -1 when it is on another host. */
    private final int[] localOf;
    /** Host of each world rank. */
    private final int[] hostOf;

    /**
     * @param members the world ranks on this host in increasing order, local rank i being {@code members[i]};
     *                {@code local} is a transport among them with those local ranks
     * @param remote  a transport among all {@code size} ranks
     * @param hostOf  the host of every world rank (see {@link Transport#hostOf}); the members' must be this rank's
     */
    public HybridTransport(int rank, int size, int[] members, Transport local, Transport remote, int[] hostOf) {
        this(rank, size, members, local, local.name(), remote, hostOf);
    }

    /**
     * Rank {@code remote.rank()} alone on its host, in a job whose other hosts' ranks talk over {@code localName}
     * within their hosts: every frame goes over {@code remote}, there is no host arena, and the name and the layout
     * are its peers'.
     */
    public static HybridTransport alone(Transport remote, String localName, int[] hostOf) {
        return new HybridTransport(remote.rank(), remote.size(), new int[] {remote.rank()}, null, localName, remote,
                hostOf);
    }

    private HybridTransport(int rank, int size, int[] members, Transport local, String localName, Transport remote,
                            int[] hostOf) {
        this.localName = localName;
        this.rank = rank;
        this.hostOf = hostOf.clone();
        this.size = size;
        this.members = members.clone();
        this.local = local;
        this.remote = remote;
        this.localOf = new int[size];
        java.util.Arrays.fill(localOf, -1);
        for (int i = 0; i < members.length; i++) {
            localOf[members[i]] = i;
        }
        boolean hostsAgree = hostOf.length == size;
        for (int m : members) {
            hostsAgree = hostsAgree && hostOf[m] == hostOf[rank];
        }
        int localRank = local == null ? 0 : local.rank();
        if (!hostsAgree || localOf[rank] < 0 || localRank != localOf[rank] || remote.rank() != rank
                || remote.size() != size || (local == null && members.length != 1)) {
            throw new IllegalArgumentException("rank " + rank + ": inconsistent hybrid transport: local group "
                    + java.util.Arrays.toString(members) + ", local rank " + localRank + ", remote rank "
                    + remote.rank() + " of " + remote.size());
        }
        if (local instanceof io.jccl.transport.shm.ShmTransport) { // a send waiting for ring room watches TCP too
            ((io.jccl.transport.shm.ShmTransport) local).watchOutsideAborts(this::remoteAbortInLocalNumbers);
        }
    }

    /** The sends that wait for room are the local transport's (TCP's readers always read). */
    @Override
    public void watchStuckSends(java.util.function.Function<FrameHeader, RuntimeException> probe) {
        if (local != null) {
            local.watchStuckSends(probe);
        }
    }

    /**
     * An abort of {@code stream}'s communicator (not a departure) waiting on the remote transport from a rank of
     * another host, its source in the local transport's numbering ({@link #localSource}), or null.
     */
    private Frame remoteAbortInLocalNumbers(int stream) {
        for (int p = 0; p < size; p++) {
            if (p == rank || isLocal(p)) {
                continue;
            }
            Frame f = remote.pendingAbort(p, stream);
            if (f != null && !f.isDeparture()) {
                return f.withHeader(f.header().withSource(localSource(f.header().source())));
            }
        }
        return null;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public String name() {
        return localName + "+" + remote.name();
    }

    @Override
    public int[] hostOf() {
        return hostOf.clone();
    }

    /** The local transport's arena: its rank i is {@code members[i]}, the ranks of this host in increasing order. */
    @Override
    public io.jccl.transport.SharedArena hostArena() {
        return local == null ? null : local.arena();
    }

    /** Whether frames to and from {@code peer} go over the local transport; none do for a rank alone. */
    private boolean isLocal(int peer) {
        return local != null && localOf[peer] >= 0;
    }

    /** A frame from the local transport, its source given back as a world rank. */
    private Frame toWorld(Frame f) {
        if (f == null) {
            return null;
        }
        FrameHeader h = f.header().withSource(worldOf(f.header().source()));
        return f.isDeparture() ? Frame.departed(h.source()) : f.withHeader(h);
    }

    /**
     * The source field of a frame on the local transport: a local rank, or for an abort relayed from a rank of
     * another host, {@code members.length + origin} (the local transport carries an abort's source as is).
     */
    private int localSource(int worldRank) {
        return isLocal(worldRank) ? localOf[worldRank] : members.length + worldRank;
    }

    private int worldOf(int localSource) {
        if (localSource >= 0 && localSource < members.length) {
            return members[localSource];
        }
        return localSource >= members.length && localSource - members.length < size ? localSource - members.length
                : localSource;
    }

    @Override
    public void send(int dst, FrameHeader header, io.jccl.buffer.Buf payload) {
        send(dst, header, payload, Long.MIN_VALUE);
    }

    /** {@code deadlineNanos} {@link Long#MIN_VALUE}: none. */
    @Override
    public boolean send(int dst, FrameHeader header, io.jccl.buffer.Buf payload, long deadlineNanos) {
        boolean none = deadlineNanos == Long.MIN_VALUE;
        if (isLocal(dst)) {
            try {
                FrameHeader h = header.withSource(localOf[header.source()]);
                if (none) {
                    local.send(localOf[dst], h, payload);
                    return true;
                }
                return local.send(localOf[dst], h, payload, deadlineNanos);
            } catch (io.jccl.transport.PeerLostException e) { // the local transport numbers its peers (and relays) itself
                throw new io.jccl.transport.PeerLostException(worldOf(e.peer()), e.getMessage(), e);
            }
        }
        if (none) {
            remote.send(dst, header, payload);
            return true;
        }
        return remote.send(dst, header, payload, deadlineNanos);
    }

    @Override
    public Frame receive(int src, int stream, long deadlineNanos) throws InterruptedException {
        return receive(src, stream, deadlineNanos, null);
    }

    @Override
    public void post(int src, int stream, PostedReceive posted) {
        if (isLocal(src)) {
            local.post(localOf[src], stream, posted);
        } else {
            remote.post(src, stream, posted);
        }
    }

    /** As {@link #receive(int, int, long)}, through {@code posted} when it is not null. */
    @Override
    public Frame receive(int src, int stream, long deadlineNanos, PostedReceive posted) throws InterruptedException {
        while (true) {
            long slice = Math.min(deadlineNanos, System.nanoTime() + WATCH_SLICE_NANOS);
            Frame f;
            if (isLocal(src)) {
                f = toWorld(posted == null ? local.receive(localOf[src], stream, slice)
                        : local.receive(localOf[src], stream, slice, posted));
            } else {
                f = posted == null ? remote.receive(src, stream, slice) : remote.receive(src, stream, slice, posted);
            }
            if (f != null) {
                return f;
            }
            Frame abort = otherAbort(src, stream);
            if (abort != null) {
                return abort;
            }
            if (System.nanoTime() - deadlineNanos >= 0) {
                return null;
            }
        }
    }

    /** An abort of the stream's communicator waiting on the transport that {@code src} does not use, or null. */
    private Frame otherAbort(int src, int stream) {
        for (int p = 0; p < size; p++) {
            if (p == rank || isLocal(p) == isLocal(src)) {
                continue;
            }
            Frame f = pendingAbort(p, stream);
            if (f != null && !f.isDeparture()) {
                return f;
            }
        }
        return null;
    }

    @Override
    public FrameHeader peekHeader(int src, int stream) {
        if (isLocal(src)) {
            FrameHeader h = local.peekHeader(localOf[src], stream);
            return h == null ? null : h.withSource(worldOf(h.source()));
        }
        return remote.peekHeader(src, stream);
    }

    @Override
    public void release(Frame frame) {
        // back to the pool of the transport that read it (its source is a world rank here): a TCP reader takes an
        // array from its pool for every frame that arrives before its receive is posted, and without its arrays back
        // it allocated one per frame (1 MiB ones in the rings between hosts: humongous to G1, a concurrent cycle
        // every few calls of a 64 MiB allreduce on the bed)
        int src = frame.header().source();
        if (src >= 0 && src < size && isLocal(src)) {
            local.release(frame);
        } else {
            remote.release(frame);
        }
    }

    @Override
    public Frame pendingAbort(int src, int stream) {
        return isLocal(src) ? toWorld(local.pendingAbort(localOf[src], stream)) : remote.pendingAbort(src, stream);
    }

    @Override
    public void abortPeers(int[] peers, FrameHeader header, String reason) {
        java.util.List<Integer> near = new java.util.ArrayList<>();
        java.util.List<Integer> far = new java.util.ArrayList<>();
        for (int p : peers) {
            (isLocal(p) ? near : far).add(p);
        }
        if (!near.isEmpty()) {
            local.abortPeers(near.stream().mapToInt(p -> localOf[p]).toArray(),
                    header.withSource(localSource(header.source())), reason);
        }
        if (!far.isEmpty()) {
            remote.abortPeers(far.stream().mapToInt(Integer::intValue).toArray(), header, reason);
        }
    }

    @Override
    public void interrupt(Frame abort) {
        remote.interrupt(abort);
        if (local == null) {
            return;
        }
        local.interrupt(new Frame(abort.header().withSource(localOf[rank]), abort.payload()));
    }

    @Override
    public void forget(int communicatorId) {
        if (local != null) {
            local.forget(communicatorId);
        }
        remote.forget(communicatorId);
    }

    @Override
    public void close() {
        try {
            if (local != null) {
                local.close();
            }
        } finally {
            remote.close();
        }
    }
}
