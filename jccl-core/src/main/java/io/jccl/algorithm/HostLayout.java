package io.jccl.algorithm;

import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Where a call's rank sits among the hosts, as the hierarchical algorithms use it: the ranks of each host in
 * increasing order, this rank's host and its index i there, and its rail (the rank of index i on every host).
 * Every host has as many ranks (the algorithms' {@code unsupported} checks it).
 */
final class HostLayout {
    /** The ranks of each host, in increasing order. */
    final int[][] byHost;
    /** The ranks of this rank's host. */
    final int[] local;
    /** This rank's index among {@link #local}. */
    final int index;
    /** The rank of index {@link #index} on every host, by host. */
    final int[] rail;

    private HostLayout(int[][] byHost, int[] local, int index, int[] rail) {
        this.byHost = byHost;
        this.local = local;
        this.index = index;
        this.rail = rail;
    }

    static HostLayout of(CollectiveCall call) {
        int[] hostOf = call.hostOf();
        int hosts = 0;
        for (int h : hostOf) {
            hosts = Math.max(hosts, h + 1);
        }
        int[][] byHost = new int[hosts][];
        for (int h = 0; h < hosts; h++) {
            byHost[h] = ranksOn(hostOf, h);
        }
        int[] local = byHost[hostOf[call.rank()]];
        int index = java.util.Arrays.binarySearch(local, call.rank());
        int[] rail = new int[hosts];
        for (int h = 0; h < hosts; h++) {
            rail[h] = byHost[h][index];
        }
        return new HostLayout(byHost, local, index, rail);
    }

    int hosts() {
        return byHost.length;
    }

    /** The ranks on host {@code h}, in increasing order. */
    private static int[] ranksOn(int[] hostOf, int h) {
        return java.util.stream.IntStream.range(0, hostOf.length).filter(r -> hostOf[r] == h).toArray();
    }

    /** {@code groups} with {@code by} added to every offset (a piece of each block). */
    static int[][] shift(int[][] groups, int by) {
        int[][] s = new int[groups.length][];
        for (int k = 0; k < groups.length; k++) {
            s[k] = new int[groups[k].length];
            for (int b = 0; b < groups[k].length; b++) {
                s[k][b] = groups[k][b] + by;
            }
        }
        return s;
    }

    /**
     * A ring over {@code group} that moves groups of blocks ({@code groups[k]}: offsets into {@code data} of
     * {@code c} elements each, those member k ends up with): at step s member k sends the blocks of group
     * k - s - shift to k + 1 and takes those of group k - s - shift - 1 from k - 1, every receive posted before the
     * sends. An allgather (shift 0, {@code op} null: member k starts with group k), or a reduce-scatter (shift 1,
     * {@code op} reduces: every member starts with its partial sums of every group).
     */
    static void ringOfGroups(CollectiveCall group, Buf data, int[][] groups, int c, ReduceOp op, int shift,
                             String phase) {
        ringOfGroups(group, data, null, groups, c, op, shift, phase, null);
    }

    /** As below, without {@code into}. */
    static void ringOfGroups(CollectiveCall group, Buf data, Buf base, int[][] groups, int c, ReduceOp op,
                             int shift, String phase) {
        ringOfGroups(group, data, base, groups, c, op, shift, phase, null);
    }

    /**
     * As above; for a reduce-scatter with {@code base} (then {@code data} may start with anything): the partial
     * sums are {@code base}'s, so step 0 sends {@code base}'s blocks and every block received becomes base op
     * payload in {@code data} (each block is received once, and sent on from {@code data}), the same operations as
     * on a copy of {@code base} without the copy. A reduce-scatter given {@code into} (of {@code c} elements; its
     * member's own group one block) writes the last step's sums there rather than into {@code data}: its own block
     * is then {@code into}, without a copy of it out of {@code data} after.
     */
    static void ringOfGroups(CollectiveCall group, Buf data, Buf base, int[][] groups, int c, ReduceOp op,
                             int shift, String phase, Buf into) {
        int n = group.size();
        int k = group.rank();
        int seg = Math.max(1, RingAllReduce.SEGMENT_BYTES / data.dtype().sizeBytes());
        if (into != null && (op == null || shift != 1 || groups[k].length != 1 || into.count() != c || n < 2)) {
            throw new IllegalArgumentException("into: a reduce-scatter of one block per member, over 2 or more");
        }
        for (int s = 0; s < n - 1; s++) {
            group.step(s, phase);
            int[] out = groups[Math.floorMod(k - s - shift, n)];
            int[] in = groups[Math.floorMod(k - s - shift - 1, n)];
            boolean last = into != null && s == n - 2; // in is this member's own group
            // as the ring's steps: blocks in segments of at most SEGMENT_BYTES, every receive posted first, and
            // segment j + 1 sent before segment j is waited for (whole blocks of 16 MiB took twice the CPU)
            Buf[] outs = segments(base != null && s == 0 ? base : data, out, c, seg);
            Buf[] ins = last ? segments(into, new int[] {0}, c, seg) : segments(data, in, c, seg);
            Buf[] bases = base == null && !last ? null : segments(base != null ? base : data, in, c, seg);
            CollectiveCall.Receive[] posted = new CollectiveCall.Receive[ins.length];
            for (int j = 0; j < ins.length; j++) {
                posted[j] = group.postRecv(Math.floorMod(k - 1, n), ins[j], op, bases == null ? null : bases[j]);
            }
            group.send((k + 1) % n, outs[0]);
            for (int j = 0; j < Math.max(outs.length, ins.length); j++) {
                if (j + 1 < outs.length) {
                    group.send((k + 1) % n, outs[j + 1]);
                }
                if (j < ins.length) {
                    group.complete(posted[j]);
                }
            }
        }
    }

    /** The blocks of {@code c} elements at {@code offsets} of {@code b}, each cut in segments of {@code seg}. */
    private static Buf[] segments(Buf b, int[] offsets, int c, int seg) {
        int per = Math.max(1, (c + seg - 1) / seg); // an empty block is one empty segment
        Buf[] out = new Buf[offsets.length * per];
        for (int i = 0; i < offsets.length; i++) {
            Buf block = b.slice(offsets[i], c);
            for (int j = 0; j < per; j++) {
                out[i * per + j] = RingAllReduce.segment(block, j, seg);
            }
        }
        return out;
    }
}
