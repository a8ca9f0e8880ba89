package io.jccl.algorithm;

/**
 * What decides whether an algorithm can run on a communicator, and part of what it costs there.
 *
 * @param world      the communicator's size
 * @param transport  the transport's short name ({@code local}, {@code shm}, {@code tcp}, {@code shm+tcp}), for
 *                   messages and the cost model
 * @param subGroup   whether the communicator is a sub-group ({@code split}), for messages
 * @param arena      whether the transport offers a shared arena
 * @param arenaBytes the bytes of one exchange buffer of that arena; 0 without one
 * @param hostOf     the host of every rank ({@code io.jccl.transport.Transport#hostOf}), or null when unknown
 * @param intraHost  the cost of messages between ranks of one host when it differs from the cost of messages
 *                   between hosts (the {@code messages} cost of {@link CollectiveAlgorithm#predictMicros}); null
 *                   otherwise
 * @param hostArenaBytes across hosts, the bytes of one exchange buffer of the arena each host's ranks share
 *                   ({@code Transport.hostArena}, which the hierarchical algorithms use within a host; its cost is
 *                   then the {@code arena} cost of {@link CollectiveAlgorithm#predictMicros}); 0 without one
 */
public record Topology(int world, String transport, boolean subGroup, boolean arena, int arenaBytes, int[] hostOf,
                       LinkCost intraHost, int hostArenaBytes) {

    /**
     * The hosts' arena counts only where every host has as many ranks, the only layouts the hierarchical
     * algorithms (its only users) run on: elsewhere a rank alone on its host has none while the others have one,
     * and every rank must price the job alike.
     */
    public Topology {
        if (ranksPerHost(hostOf) == 0) {
            hostArenaBytes = 0;
        }
    }

    /** A communicator whose layout is unknown or on one host. */
    public Topology(int world, String transport, boolean subGroup, boolean arena, int arenaBytes) {
        this(world, transport, subGroup, arena, arenaBytes, null, null);
    }

    /** A communicator whose hosts share no arena within each. */
    public Topology(int world, String transport, boolean subGroup, boolean arena, int arenaBytes, int[] hostOf,
                    LinkCost intraHost) {
        this(world, transport, subGroup, arena, arenaBytes, hostOf, intraHost, 0);
    }

    /** The number of hosts: the world size when the layout is unknown (every rank counted as a host). */
    public int hosts() {
        if (hostOf == null) {
            return world;
        }
        int max = -1;
        for (int h : hostOf) {
            max = Math.max(max, h);
        }
        return max + 1;
    }

    /** The ranks on each host when every host has as many, else 0; 1 when the layout is unknown. */
    public int ranksPerHost() {
        return ranksPerHost(hostOf);
    }

    private static int ranksPerHost(int[] hostOf) {
        if (hostOf == null) {
            return 1;
        }
        int hosts = 0;
        for (int h : hostOf) {
            hosts = Math.max(hosts, h + 1);
        }
        int[] n = new int[hosts];
        for (int h : hostOf) {
            n[h]++;
        }
        for (int c : n) {
            if (c != n[0]) {
                return 0;
            }
        }
        return n[0];
    }

    /** Whether the ranks are on several hosts, several on some host: where intra- and inter-host links differ. */
    public boolean multiHost() {
        return hostOf != null && hosts() > 1 && hosts() < world;
    }

    /** Whether the ranks of each host are consecutive (0..L-1 on the first host, and so on). */
    public boolean hostsContiguous() {
        if (hostOf == null) {
            return true;
        }
        for (int r = 1; r < hostOf.length; r++) {
            if (hostOf[r] != hostOf[r - 1] && hostOf[r] != hostOf[r - 1] + 1) {
                return false;
            }
        }
        return true;
    }

    /**
     * How many times the cost per byte of messages within a host the link between hosts must cost, at least, to
     * count as the limit of an algorithm across hosts ({@link #overlapsHosts}), by the cost model's
     * {@code inter_host.link} and {@code intra_host.link} parameters. On the 2 x 2 test bed at 1 Gbit/s
     * the ratio is 13.7 (0.0085 against 0.00062 us/B, {@code jccl tune --hosts 2 --link 1gbit}) and the pipeline
     * makes a 64 MiB allreduce 0.574 s where it takes 0.658 s without; on the same bed unlimited it is 3.2 (0.00165
     * against 0.00052: the veth pair's bytes cost the same cores as the ranks' copies) and the pipeline makes it
     * 1.4x slower (docs/performance.md, "Pipelined only where the link is the limit").
     */
    public static final double LINK_BOUND_RATIO = 6;

    /**
     * Whether the hierarchical algorithms overlap their phases within and across hosts (their pipeline of chunks,
     * with a second thread per rank for the phase across hosts): only where the link between hosts, whose cost is
     * {@code messages}, is the limit and not the CPU, that is where a byte between hosts costs
     * {@link #LINK_BOUND_RATIO} times a byte within a host or more. Where the CPU is the limit the second thread
     * competes with the first for it and the overlap costs more than it gains. A function of the layout and the
     * cost model's parameters, which every rank of a job shares, so every rank decides alike.
     *
     * @param messages the cost of messages between hosts
     * @return whether the phases within and across hosts overlap
     */
    public boolean overlapsHosts(LinkCost messages) {
        return multiHost() && intraHost != null
                && messages.betaMicrosPerByte() >= LINK_BOUND_RATIO * intraHost.betaMicrosPerByte();
    }

    /** The cost of messages within a host: {@link #intraHost} when known, else {@code messages}. */
    public LinkCost intraHost(LinkCost messages) {
        return intraHost != null ? intraHost : messages;
    }

    /** This topology with {@code cost} as the cost of messages within a host. */
    public Topology withIntraHost(LinkCost cost) {
        return new Topology(world, transport, subGroup, arena, arenaBytes, hostOf, cost, hostArenaBytes);
    }
}
