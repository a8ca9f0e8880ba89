package io.jccl.algorithm;

import io.jccl.OpType;
import io.jccl.step.CollectiveCall;

/**
 * Barrier across hosts through one rank of each ({@code HostLeaders} with no data): every rank of a host checks in
 * with its first rank over shared memory, the first ranks of the hosts exchange empty frames over TCP, and each
 * releases its host. Three steps, one of them across hosts, where the flat check and dissemination barrier
 * ({@link SignatureCheck}) takes 1 + ceil(log2 P), all of them across hosts when the ranks are numbered host by host.
 * Checks every rank's signature as that barrier does.
 */
public final class HierarchicalBarrier extends HierarchicalAlgorithm {
    @Override
    public OpType operation() {
        return OpType.BARRIER;
    }

    @Override
    public void run(CollectiveCall call, Operands operands) {
        HostLeaders.agree(call, 0);
    }

    /** Two steps at the intra-host cost and one across hosts, no bytes. */
    @Override
    public double predictMicros(long bytes, Topology topology, LinkCost messages, LinkCost arena) {
        return HostLeaders.predictMicros(0, Math.max(1, topology.ranksPerHost()), topology.hosts(),
                topology.intraHost(messages), messages);
    }
}
