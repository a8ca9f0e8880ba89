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
 */
public record Topology(int world, String transport, boolean subGroup, boolean arena, int arenaBytes, int[] hostOf,
                       LinkCost intraHost) {

    /** A communicator whose layout is unknown or on one host. */
    public Topology(int world, String transport, boolean subGroup, boolean arena, int arenaBytes) {
        this(world, transport, subGroup, arena, arenaBytes, null, null);
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
        if (hostOf == null) {
            return 1;
        }
        int[] n = new int[hosts()];
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

    /** The cost of messages within a host: {@link #intraHost} when known, else {@code messages}. */
    public LinkCost intraHost(LinkCost messages) {
        return intraHost != null ? intraHost : messages;
    }

    /** This topology with {@code cost} as the cost of messages within a host. */
    public Topology withIntraHost(LinkCost cost) {
        return new Topology(world, transport, subGroup, arena, arenaBytes, hostOf, cost);
    }
}
