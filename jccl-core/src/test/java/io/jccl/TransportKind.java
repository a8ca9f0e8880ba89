package io.jccl;

import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.store.InMemoryStore;
import io.jccl.security.JobSecret;
import io.jccl.transport.tcp.TcpOptions;
import io.jccl.transport.shm.ShmTransport;
import io.jccl.transport.tcp.TcpTransport;

import java.time.Duration;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/** The transports the contract suite runs over, with ranks as threads of this JVM. */
enum TransportKind {
    LOCAL {
        @Override
        List<Communicator> create(int world, CommunicatorConfig config) {
            // small exchange buffers, so that the shared-memory algorithms run many rounds
            io.jccl.transport.local.QueueMesh mesh = io.jccl.transport.local.QueueMesh.create(world, ARENA_BYTES);
            List<Communicator> comms = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                comms.add(new DefaultCommunicator(mesh.endpoint(r), config));
            }
            return comms;
        }
    },
    TCP {
        @Override
        List<Communicator> create(int world, CommunicatorConfig config) {
            InMemoryStore store = new InMemoryStore();
            JobSecret secret = JobSecret.generate();
            List<CompletableFuture<Communicator>> futures = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                int rank = r;
                futures.add(CompletableFuture.supplyAsync(() -> new DefaultCommunicator(
                        TcpTransport.connect(rank, world, store, TcpOptions.loopback(secret)), config), THREADS));
            }
            List<Communicator> comms = new ArrayList<>();
            for (CompletableFuture<Communicator> f : futures) {
                comms.add(f.join());
            }
            return comms;
        }
    },
    SHM {
        @Override
        List<Communicator> create(int world, CommunicatorConfig config) {
            InMemoryStore store = new InMemoryStore();
            List<CompletableFuture<Communicator>> futures = new ArrayList<>();
            for (int r = 0; r < world; r++) {
                int rank = r;
                futures.add(CompletableFuture.supplyAsync(() -> new DefaultCommunicator(ShmTransport.connect(rank,
                        world, store, ShmTransport.defaultDirectory(), 64 << 10, ARENA_BYTES, 16 << 20, Duration.ofSeconds(30)), config),
                        THREADS));
            }
            List<Communicator> comms = new ArrayList<>();
            for (CompletableFuture<Communicator> f : futures) {
                comms.add(f.join());
            }
            return comms;
        }
    };

    /** Exchange buffers of the shared arenas in tests: small, so that large calls take many rounds. */
    static final int ARENA_BYTES = 8192;

    abstract List<Communicator> create(int world, CommunicatorConfig config);

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

    static List<TransportKind> all() {
        return Arrays.asList(values());
    }
}
