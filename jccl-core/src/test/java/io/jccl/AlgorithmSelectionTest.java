package io.jccl;

import io.jccl.instrument.Counter;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** AUTO resolves to the communicator's choice; a call's explicit choice wins; an unknown choice is refused. */
class AlgorithmSelectionTest {

    @Test
    void shouldUseTheCommunicatorsChoiceForAuto() {
        CommunicatorConfig tree = CommunicatorConfig.fromEnvironment().withAlgorithm(OpType.ALL_REDUCE, Algorithm.TREE);
        List<long[]> msgs = Jccl.runThreads(4, tree, comm -> {
            comm.allReduce(new float[64], ReduceOp.SUM); // AUTO: the tree
            long treeMsgs = comm.counters().get(OpType.ALL_REDUCE, Counter.MESSAGES_SENT);
            comm.counters().reset();
            comm.allReduce(Tensor.of(new float[64]), ReduceOp.SUM,
                    CollectiveOptions.DEFAULT.withAlgorithm(Algorithm.RING)); // the call's choice wins
            return new long[] {treeMsgs, comm.counters().get(OpType.ALL_REDUCE, Counter.MESSAGES_SENT)};
        });
        // tree on 4 ranks: rank 0 sends to its 2 children; every ring rank sends 2(P-1) = 6 frames
        assertEquals(2, msgs.get(0)[0]);
        assertEquals(1, msgs.get(3)[0]);
        for (long[] m : msgs) {
            assertEquals(6, m[1]);
        }
        assertThrows(IllegalArgumentException.class,
                () -> CommunicatorConfig.fromEnvironment().withAlgorithm(OpType.BROADCAST, Algorithm.RING));
    }
}
