package io.jccl;

import io.jccl.buffer.Buf;
import io.jccl.buffer.Bufs;
import io.jccl.reference.InputGenerator;
import io.jccl.reference.ReferenceModel;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every collective against the exact Java reference, over random world sizes, counts, dtypes, ops and roots. */
class CollectivesPropertyTest {

    static final class Case {
        final int world;
        final int block;
        final DataType dtype;
        final ReduceOp op;
        final int root;
        final long seed;
        TransportKind kind = TransportKind.LOCAL;
        /** RING (gloo's order, compared bit for bit with the gloo-order model) or SHARED_MEMORY (rank order). */
        Algorithm algorithm = Algorithm.RING;

        Case(int world, int block, DataType dtype, ReduceOp op, int root, long seed) {
            this.world = world;
            this.block = block;
            this.dtype = dtype;
            this.op = op;
            this.root = root;
            this.seed = seed;
        }

        @Override
        public String toString() {
            return kind + " " + algorithm + " world=" + world + " block=" + block + " " + dtype + " " + op + " root=" + root + " seed=" + seed;
        }
    }

    @Provide
    Arbitrary<Case> cases() {
        return Combinators.combine(ringCases(), Arbitraries.of(Algorithm.RING, Algorithm.SHARED_MEMORY))
                .as((c, a) -> {
                    c.algorithm = a;
                    return c;
                });
    }

    private Arbitrary<Case> ringCases() {
        return Combinators.combine(Arbitraries.integers().between(1, 8),
                Arbitraries.integers().between(0, 700),
                Arbitraries.of(DataType.class), Arbitraries.of(ReduceOp.class),
                Arbitraries.integers().between(0, 7), Arbitraries.longs())
                .as((w, n, dt, op, root, seed) -> new Case(w, n, dt, op, root % w, seed))
                .filter(c -> c.op.supports(c.dtype));
    }

    /** The same cases over TCP sockets (fewer tries: each sets up a full mesh of connections). */
    @Provide
    Arbitrary<Case> tcpCases() {
        return ringCases().map(c -> {
            c.kind = TransportKind.TCP;
            return c;
        });
    }

    /** The same cases over shared memory, with small rings so that frames are cut into many fragments. */
    @Provide
    Arbitrary<Case> shmCases() {
        return cases().map(c -> {
            c.kind = TransportKind.SHM;
            return c;
        });
    }

    private static List<Buf> inputs(Case c, int count) {
        List<Buf> in = new ArrayList<>();
        for (int r = 0; r < c.world; r++) {
            in.add(InputGenerator.generate(c.dtype, c.op, count, c.seed, r));
        }
        return in;
    }

    private static Tensor tensor(Buf b) {
        return Tensor.ofArray(b.dtype(), b.array(), b.offset(), b.count());
    }

    /** The allreduce result of {@code c}'s algorithm: gloo's ring order, or rank order. */
    private static Buf expectedAllReduce(Case c, List<Buf> in) {
        return c.algorithm == Algorithm.SHARED_MEMORY ? ReferenceModel.allReduceInRankOrder(in, c.op)
                : ReferenceModel.allReduce(in, c.op);
    }

    private static void assertAll(List<RankHarness.Outcome<Boolean>> out, Case c) {
        for (int r = 0; r < out.size(); r++) {
            Throwable error = out.get(r).error;
            assertNull(error, () -> "rank failed for " + c + ": " + error);
            int rank = r;
            assertTrue(out.get(r).value, () -> "rank " + rank + " differs from the reference for " + c);
        }
    }

    @Property(tries = 60)
    void allReduceMatchesReference(@ForAll("cases") Case c) throws Exception {
        int count = c.block * c.world + c.root; // not a multiple of the world size in general
        List<Buf> in = inputs(c, count);
        Buf expected = expectedAllReduce(c, in);
        assertAll(RankHarness.run(c.kind, c.world, Duration.ofSeconds(20), c.algorithm, comm -> {
            Buf mine = in.get(comm.rank()).copyOf(0, count);
            comm.allReduce(tensor(mine), c.op);
            return Bufs.bitEqual(mine, expected);
        }), c);
    }

    @Property(tries = 40)
    void reduceScatterMatchesAllReduceBlock(@ForAll("cases") Case c) throws Exception {
        List<Buf> in = inputs(c, c.block * c.world);
        Buf all = expectedAllReduce(c, in);
        assertAll(RankHarness.run(c.kind, c.world, Duration.ofSeconds(20), c.algorithm, comm -> {
            Buf out = Buf.allocate(c.dtype, c.block);
            comm.reduceScatter(tensor(in.get(comm.rank())), tensor(out), c.op);
            return Bufs.bitEqual(out, ReferenceModel.block(all, c.world, comm.rank()));
        }), c);
    }

    /**
     * The ring reduce_scatter and reduce read their input once, reducing each received piece with it into a scratch
     * buffer (a posted receive with a base, filled from the socket in pieces at offsets): over TCP, with blocks of
     * several segments, out of place and in place (the output a block of the input), bit for bit gloo's order, and
     * the input of every rank but the root unchanged.
     */
    @Example
    void largeRingReduceScatterAndReduceOverTcpReadTheInputOnce() throws Exception {
        for (DataType dtype : new DataType[] {DataType.FLOAT32, DataType.FLOAT64}) {
            Case c = new Case(3, 400_003, dtype, ReduceOp.SUM, 1, 7);
            c.kind = TransportKind.TCP;
            int n = c.block * c.world;
            List<Buf> in = inputs(c, n);
            Buf all = ReferenceModel.allReduce(in, c.op);
            assertAll(RankHarness.run(c.kind, c.world, Duration.ofSeconds(60), Algorithm.RING, comm -> {
                int r = comm.rank();
                Buf out = Buf.allocate(dtype, c.block);
                Buf input = in.get(r).copyOf(0, n);
                comm.reduceScatter(tensor(input), tensor(out), c.op);
                boolean ok = Bufs.bitEqual(out, ReferenceModel.block(all, c.world, r))
                        && Bufs.bitEqual(input, in.get(r));
                Buf inPlace = in.get(r).copyOf(0, n);
                comm.reduceScatter(tensor(inPlace), tensor(inPlace.slice(r * c.block, c.block)), c.op);
                ok &= Bufs.bitEqual(inPlace.slice(r * c.block, c.block), ReferenceModel.block(all, c.world, r));
                Buf mine = in.get(r).copyOf(0, n);
                comm.reduce(tensor(mine), c.root, c.op);
                return ok && Bufs.bitEqual(mine, r == c.root ? all : in.get(r));
            }), c);
        }
    }

    @Property(tries = 40)
    void reduceMatchesAllReduceOnRoot(@ForAll("cases") Case c) throws Exception {
        int count = c.block + c.world;
        List<Buf> in = inputs(c, count);
        Buf expected = expectedAllReduce(c, in);
        assertAll(RankHarness.run(c.kind, c.world, Duration.ofSeconds(20), c.algorithm, comm -> {
            Buf mine = in.get(comm.rank()).copyOf(0, count);
            comm.reduce(tensor(mine), c.root, c.op);
            return Bufs.bitEqual(mine, comm.rank() == c.root ? expected : in.get(comm.rank()));
        }), c);
    }

    @Property(tries = 40)
    void broadcastAllGatherGatherScatterAllToAll(@ForAll("cases") Case c) throws Exception {
        List<Buf> in = inputs(c, c.block * c.world);
        assertAll(RankHarness.run(c.kind, c.world, Duration.ofSeconds(20), c.algorithm, comm -> {
            int r = comm.rank();
            int p = comm.size();
            List<String> differ = new ArrayList<>();

            Buf b = in.get(r).copyOf(0, in.get(r).count());
            comm.broadcast(tensor(b), c.root);
            if (!Bufs.bitEqual(b, in.get(c.root))) {
                differ.add("broadcast");
            }

            List<Buf> blocks = new ArrayList<>();
            for (Buf x : in) {
                blocks.add(ReferenceModel.block(x, p, 0));
            }
            Buf gathered = Buf.allocate(c.dtype, c.block * p);
            comm.allGather(tensor(blocks.get(r)), tensor(gathered));
            if (!Bufs.bitEqual(gathered, ReferenceModel.allGather(blocks))) {
                differ.add("allGather");
            }

            Buf atRoot = Buf.allocate(c.dtype, c.block * p);
            comm.gather(tensor(blocks.get(r)), r == c.root ? tensor(atRoot) : null, c.root);
            if (r == c.root) {
                if (!Bufs.bitEqual(atRoot, ReferenceModel.allGather(blocks))) {
                differ.add("gather");
            }
            }

            Buf part = Buf.allocate(c.dtype, c.block);
            comm.scatter(r == c.root ? tensor(in.get(r)) : null, tensor(part), c.root);
            if (!Bufs.bitEqual(part, ReferenceModel.block(in.get(c.root), p, r))) {
                differ.add("scatter");
            }

            Buf exchanged = Buf.allocate(c.dtype, c.block * p);
            comm.allToAll(tensor(in.get(r)), tensor(exchanged));
            if (!Bufs.bitEqual(exchanged, ReferenceModel.allToAll(in, r))) {
                differ.add("allToAll");
            }

            comm.barrier();
            if (!differ.isEmpty()) {
                throw new AssertionError("rank " + r + ": " + differ + " differ from the reference");
            }
            return true;
        }), c);
    }

    @Property(tries = 15)
    void allReduceMatchesReferenceOverTcp(@ForAll("tcpCases") Case c) throws Exception {
        allReduceMatchesReference(c);
    }

    @Property(tries = 10)
    void reduceScatterMatchesAllReduceBlockOverTcp(@ForAll("tcpCases") Case c) throws Exception {
        reduceScatterMatchesAllReduceBlock(c);
    }

    @Property(tries = 10)
    void everyOtherCollectiveOverTcp(@ForAll("tcpCases") Case c) throws Exception {
        broadcastAllGatherGatherScatterAllToAll(c);
    }

    @Property(tries = 15)
    void allReduceMatchesReferenceOverShm(@ForAll("shmCases") Case c) throws Exception {
        allReduceMatchesReference(c);
    }

    @Property(tries = 10)
    void everyOtherCollectiveOverShm(@ForAll("shmCases") Case c) throws Exception {
        broadcastAllGatherGatherScatterAllToAll(c);
        reduceScatterMatchesAllReduceBlock(c);
    }
}
