package io.jccl;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** split with MPI semantics, on every transport: groups run collectives side by side and nest. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SplitTest {

    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void shouldFormGroupsByColorOrderedByKey(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<int[]>> out = RankHarness.run(kind, 6, Duration.ofSeconds(20), comm -> {
            int r = comm.rank();
            // pipeline stages: even and odd ranks; key reverses the order inside each stage; rank 5 sits out
            Communicator stage = comm.split(r == 5 ? Communicator.UNDEFINED : r % 2, -r);
            if (r == 5) {
                assertNull(stage);
                comm.barrier();
                return new int[0];
            }
            float[] x = {r};
            stage.allReduce(x, ReduceOp.SUM);
            float[] fromStageRoot = {r * 10};
            stage.broadcast(fromStageRoot, 0);
            Communicator pair = stage.split(stage.rank() / 2, 0); // nested
            int[] y = {r};
            pair.allReduce(Tensor.of(y), ReduceOp.MAX);
            comm.barrier(); // the parent still works, in order with the children
            int[] result = {stage.rank(), stage.size(), (int) x[0], (int) fromStageRoot[0], y[0]};
            pair.close();
            stage.close();
            return result;
        });
        // evens {0,2,4} keyed -r: ranks 4,2,0 -> child 0,1,2; odds {1,3}: 3,1 -> child 0,1
        int[][] expected = {
            {2, 3, 6, 40, 0}, {1, 2, 4, 30, 1}, {1, 3, 6, 40, 2}, {0, 2, 4, 30, 3}, {0, 3, 6, 40, 4}, {}};
        for (int r = 0; r < 6; r++) {
            assertNull(out.get(r).error);
            if (r == 4 || r == 2) {
                // pair of child ranks 0,1 in the even stage: ranks 4 and 2 -> max 4
                assertEquals(4, out.get(r).value[4]);
                expected[r][4] = 4;
            }
            if (r == 3 || r == 1) {
                assertEquals(3, out.get(r).value[4]);
                expected[r][4] = 3;
            }
            assertArrayEquals(expected[r], out.get(r).value, "rank " + r);
        }
    }

    /**
     * Closing the parent first: its sub-groups run over its transport. Over TCP a child's receive waited until its
     * deadline and a child's send blamed a live peer's process for the lost connection; closing the parent now
     * closes its children, whose calls fail at once saying the communicator is closed.
     */
    @ParameterizedTest
    @EnumSource(TransportKind.class)
    void closingTheParentClosesItsSubGroups(TransportKind kind) throws Exception {
        List<RankHarness.Outcome<String>> out = RankHarness.run(kind, 2, Duration.ofSeconds(30), comm -> {
            Communicator child = comm.split(0, comm.rank());
            float[] x = {1};
            child.allReduce(x, ReduceOp.SUM);
            comm.barrier();
            if (comm.rank() == 1) { // its peer closes while it stays open
                Thread.sleep(3_000);
                comm.close();
                return "closed";
            }
            comm.close();
            long start = System.nanoTime();
            JcclException e = org.junit.jupiter.api.Assertions.assertThrows(JcclException.class,
                    () -> child.recv(Tensor.of(new float[1]), 1, 0));
            JcclException s = org.junit.jupiter.api.Assertions.assertThrows(JcclException.class,
                    () -> child.send(Tensor.of(new float[1]), 1, 0));
            org.junit.jupiter.api.Assertions.assertTrue(System.nanoTime() - start < 2_000_000_000L, "not at once");
            child.close(); // a second close does nothing
            return e.getMessage() + " | " + s.getMessage();
        });
        for (RankHarness.Outcome<String> o : out) {
            assertNull(o.error);
            org.junit.jupiter.api.Assertions.assertTrue(o.value.contains("closed"), o.value);
        }
    }
}
