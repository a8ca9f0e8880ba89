package io.jccl;

import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.store.InMemoryStore;
import io.jccl.security.JobSecret;
import io.jccl.transport.tcp.TcpOptions;
import io.jccl.transport.shm.ShmTransport;
import io.jccl.transport.Transport;
import io.jccl.transport.tcp.TcpTransport;

import java.time.Duration;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The transports the contract suites run over, with ranks as threads of this JVM: {@link #connect} makes one
 * transport per rank ({@code transport.TransportContractTest}), {@link #create} a communicator over each.
 */
public enum TransportKind {
    LOCAL {
        @Override
        public List<Transport> connect(int world) {
            // small exchange buffers, so that the shared-memory algorithms run many rounds
            io.jccl.transport.local.QueueMesh mesh = io.jccl.transport.local.QueueMesh.create(world, ARENA_BYTES);
            List<Transport> transports = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                transports.add(mesh.endpoint(r));
            }
            return transports;
        }
    },
    TCP {
        @Override
        public List<Transport> connect(int world) {
            InMemoryStore store = new InMemoryStore();
            JobSecret secret = JobSecret.generate();
            return inParallel(world, rank -> TcpTransport.connect(rank, world, store, TcpOptions.loopback(secret)));
        }
    },
    SHM {
        @Override
        public List<Transport> connect(int world) {
            return connectShm(world, ARENA_BYTES);
        }
    };

    /** Shared-memory transports whose exchange buffers hold {@code arenaBytes} each, one per rank, rank order. */
    static List<Transport> connectShm(int world, int arenaBytes) {
        InMemoryStore store = new InMemoryStore();
        return inParallel(world, rank -> ShmTransport.connect(rank, world, store, ShmTransport.defaultDirectory(),
                64 << 10, arenaBytes, 16 << 20, Duration.ofSeconds(30)));
    }

    /** One connected transport per rank, rank order. */
    public abstract List<Transport> connect(int world);

    /** A communicator over each rank's transport, rank order. */
    List<Communicator> create(int world, CommunicatorConfig config) {
        List<Communicator> comms = new ArrayList<>();
        for (Transport t : connect(world)) {
            comms.add(new DefaultCommunicator(t, config));
        }
        return comms;
    }

    /** Connects every rank at once, each on its own thread (they meet each other while connecting). */
    private static List<Transport> inParallel(int world, java.util.function.IntFunction<Transport> connect) {
        List<CompletableFuture<Transport>> futures = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            int rank = r;
            futures.add(CompletableFuture.supplyAsync(() -> connect.apply(rank), THREADS));
        }
        List<Transport> transports = new ArrayList<>();
        for (CompletableFuture<Transport> f : futures) {
            transports.add(f.join());
        }
        return transports;
    }

    /** Exchange buffers of the shared arenas in tests: small, so that large calls take many rounds. */
    static final int ARENA_BYTES = 8192;

    /**
     * A thread per task: ranks block on each other while connecting, so they must not share a bounded pool
     * (the common pool has one thread on a 2-core machine, and on newer JDKs CompletableFuture uses it).
     */
    static final java.util.concurrent.Executor THREADS = r -> {
        Thread t = new Thread(r, "jccl-test-rank");
        t.setDaemon(true);
        t.start();
    };

    /** Closes every communicator at once (a TCP close waits briefly for the peers' goodbyes). */
    static void closeAll(List<Communicator> comms) {
        CompletableFuture.allOf(comms.stream().map(c -> CompletableFuture.runAsync(c::close, THREADS))
                .toArray(CompletableFuture[]::new)).join();
    }

    /** Closes every transport at once, as {@link #closeAll} closes communicators. */
    public static void closeTransports(List<Transport> transports) {
        CompletableFuture.allOf(transports.stream().map(t -> CompletableFuture.runAsync(t::close, THREADS))
                .toArray(CompletableFuture[]::new)).join();
    }

    static List<TransportKind> all() {
        return Arrays.asList(values());
    }
}
