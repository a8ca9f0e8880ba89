package io.jccl.algorithm;

import io.jccl.ReduceOp;
import io.jccl.buffer.Buf;
import io.jccl.step.CollectiveCall;

/**
 * Allreduce through one rank of each host, its <em>leader</em> (its first rank), in three steps: the fewest steps
 * across hosts (one) for small buffers, where steps cost more than bytes.
 * <ol>
 *   <li>Every other rank of a host sends its buffer to the leader, which sums the L buffers in local rank order
 *       (over shared memory).</li>
 *   <li>The H leaders send their host sums to each other, every receive posted first, and each sums the H in host
 *       order (over TCP): T(H-1) bytes through each host's link.</li>
 *   <li>Every leader sends the total to the other ranks of its host.</li>
 * </ol>
 * Every rank ends with {@code ((S0 op S1) ...) op S(H-1)} for {@code Sh = ((x(h,0) op x(h,1)) ...) op x(h,L-1)}:
 * the same bits everywhere, fixed by the layout. With no elements and no operator it is a barrier that checks the
 * call's signature ({@link #agree}): no rank finishes step 3 before every rank has entered step 1, and every
 * frame's signature is compared with its receiver's, the locals' with their leader's and the leaders' with each
 * other's, so either every comparison holds (every rank made the same call) or some leader fails and never sends
 * the frames the others wait for (the failure reaches them as an abort). What the hierarchical allreduce runs up to
 * {@link HierarchicalAllReduce#LEADERS_MAX_BYTES}, what the hierarchical broadcast checks its call with, and the
 * hierarchical barrier.
 */
final class HostLeaders {
    /** The steps {@link #allReduce} takes. */
    static final int STEPS = 3;

    private HostLeaders() {
    }

    /**
     * One step of the intra-host cost to the leader moving T(L-1) bytes into it and one moving them back out, one
     * step across hosts moving T(H-1) bytes out of each leader.
     */
    static double predictMicros(double bytes, int ranksPerHost, int hosts, LinkCost within, LinkCost across) {
        return within.micros(2, 2 * bytes * (ranksPerHost - 1)) + across.micros(1, bytes * (hosts - 1));
    }

    /** The signature check and barrier: {@link #allReduce} of nothing, steps {@code firstStep} to +2; the next step. */
    static int agree(CollectiveCall call, int firstStep) {
        allReduce(call, HostLayout.of(call), Buf.allocate(call.signature().dtype(), 0), null, firstStep);
        return firstStep + STEPS;
    }

    /** Reduces {@code data} with {@code op} on every rank of the layout {@code at}, steps {@code firstStep} to +2. */
    static void allReduce(CollectiveCall call, HostLayout at, Buf data, ReduceOp op, int firstStep) {
        int leader = at.local[0];
        call.step(firstStep, "to the host's leader");
        if (at.index != 0) {
            call.send(leader, data);
            call.step(firstStep + 2, "from the host's leader");
            call.recvInto(leader, data);
            return;
        }
        sumOfAll(call, at.local, 0, data, op, false);
        call.step(firstStep + 1, "between the hosts' leaders");
        int[] leaders = new int[at.hosts()];
        int mine = -1;
        for (int h = 0; h < leaders.length; h++) {
            leaders[h] = at.byHost[h][0];
            if (leaders[h] == call.rank()) {
                mine = h;
            }
        }
        sumOfAll(call, leaders, mine, data, op, true);
        call.step(firstStep + 2, "from the host's leader");
        for (int k = 1; k < at.local.length; k++) {
            call.send(at.local[k], data);
        }
    }

    /**
     * The buffers of {@code group} reduced in group order into {@code data}, this rank's (member {@code mine}):
     * every receive posted; then, when {@code exchange}, this rank's buffer sent to every other member; then the
     * ordered sum of the buffers once all have come.
     */
    private static void sumOfAll(CollectiveCall call, int[] group, int mine, Buf data, ReduceOp op,
                                 boolean exchange) {
        int n = data.count();
        int p = group.length;
        Buf copies = call.scratch(data.dtype(), p * n);
        data.copyTo(copies, mine * n);
        CollectiveCall.Receive[] posted = new CollectiveCall.Receive[p];
        for (int k = 0; k < p; k++) {
            if (k != mine) {
                posted[k] = call.postRecv(group[k], copies.slice(k * n, n), null);
            }
        }
        for (int k = 0; exchange && k < p; k++) {
            if (k != mine) {
                call.send(group[k], data);
            }
        }
        for (CollectiveCall.Receive r : posted) {
            if (r != null) {
                call.complete(r);
            }
        }
        if (n > 0) {
            OrderedAllReduce.sumInRankOrder(copies, p, n, data, op);
        }
        call.releaseScratch(copies);
    }
}
