package io.jccl.rendezvous;

import java.util.Map;

/**
 * Rank, world size and master address from the environment, as the launchers people already use set them. The
 * first variable set wins: jccl's own ({@code JCCL_RANK}, {@code JCCL_WORLD_SIZE}, {@code JCCL_LOCAL_RANK},
 * {@code JCCL_MASTER_ADDR}, {@code JCCL_MASTER_PORT}), then torchrun's ({@code RANK}, {@code WORLD_SIZE},
 * {@code LOCAL_RANK}, {@code MASTER_ADDR}, {@code MASTER_PORT}), then Open MPI's ({@code OMPI_COMM_WORLD_RANK},
 * {@code OMPI_COMM_WORLD_SIZE}, {@code OMPI_COMM_WORLD_LOCAL_RANK}), then Slurm's ({@code SLURM_PROCID},
 * {@code SLURM_NTASKS}, {@code SLURM_LOCALID}). The master defaults to 127.0.0.1:29500.
 */
public final class LaunchEnvironment {
    public static final String DEFAULT_MASTER_ADDR = "127.0.0.1";
    public static final int DEFAULT_MASTER_PORT = 29500;

    private final int rank;
    private final int worldSize;
    private final int localRank;
    private final String masterAddr;
    private final int masterPort;
    private final String transport;

    public LaunchEnvironment(int rank, int worldSize, int localRank, String masterAddr, int masterPort,
                             String transport) {
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank must be in [0, worldSize): rank=" + rank + ", worldSize="
                    + worldSize);
        }
        this.rank = rank;
        this.worldSize = worldSize;
        this.localRank = localRank;
        this.masterAddr = masterAddr;
        this.masterPort = masterPort;
        this.transport = transport;
    }

    public static LaunchEnvironment fromEnvironment() {
        return from(System.getenv());
    }

    /** Parses a map of environment variables. */
    public static LaunchEnvironment from(Map<String, String> env) {
        String rank = first(env, "JCCL_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID");
        String size = first(env, "JCCL_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS");
        if (rank == null || size == null) {
            throw new IllegalStateException("no rank and world size in the environment: set JCCL_RANK and "
                    + "JCCL_WORLD_SIZE (or run under jccl launch, torchrun, mpirun or srun)");
        }
        String local = first(env, "JCCL_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID");
        String addr = first(env, "JCCL_MASTER_ADDR", "MASTER_ADDR");
        String port = first(env, "JCCL_MASTER_PORT", "MASTER_PORT");
        String transport = first(env, "JCCL_TRANSPORT");
        return new LaunchEnvironment(parse("rank", rank), parse("world size", size),
                local == null ? parse("rank", rank) : parse("local rank", local),
                addr == null ? DEFAULT_MASTER_ADDR : addr, port == null ? DEFAULT_MASTER_PORT : parse("port", port),
                transport == null ? "auto" : transport.trim().toLowerCase(java.util.Locale.ROOT));
    }

    private static String first(Map<String, String> env, String... names) {
        for (String n : names) {
            String v = env.get(n);
            if (v != null && !v.isBlank()) {
                return v.trim();
            }
        }
        return null;
    }

    private static int parse(String what, String v) {
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(what + " in the environment is not a number: '" + v + "'", e);
        }
    }

    public int rank() {
        return rank;
    }

    public int worldSize() {
        return worldSize;
    }

    public int localRank() {
        return localRank;
    }

    public String masterAddr() {
        return masterAddr;
    }

    public int masterPort() {
        return masterPort;
    }

    /** {@code auto}, {@code tcp} or {@code shm} ({@code JCCL_TRANSPORT}). */
    public String transport() {
        return transport;
    }
}
