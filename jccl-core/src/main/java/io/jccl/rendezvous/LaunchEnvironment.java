package io.jccl.rendezvous;

import java.util.Map;

/**
 * Rank, world size and master address from the environment, as the launchers people already use set them. The
 * first variable set wins: jccl's own ({@code JCCL_RANK}, {@code JCCL_WORLD_SIZE}, {@code JCCL_LOCAL_RANK},
 * {@code JCCL_MASTER_ADDR}, {@code JCCL_MASTER_PORT}), then torchrun's ({@code RANK}, {@code WORLD_SIZE},
 * {@code LOCAL_RANK}, {@code MASTER_ADDR}, {@code MASTER_PORT}), then Open MPI's ({@code OMPI_COMM_WORLD_RANK},
 * {@code OMPI_COMM_WORLD_SIZE}, {@code OMPI_COMM_WORLD_LOCAL_RANK}), then Slurm's ({@code SLURM_PROCID},
 * {@code SLURM_NTASKS}, {@code SLURM_LOCALID}). The master's address and port have no default: unset, they are
 * null and -1, and {@link InitMethod env://} refuses them for a job of more than one rank.
 */
public final class LaunchEnvironment {
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

    /** Parses this process's environment ({@link io.jccl.JcclSettings#environment()}). */
    public static LaunchEnvironment fromEnvironment() {
        return from(io.jccl.JcclSettings.fromEnvironment().environment());
    }

    /** Parses a map of environment variables. */
    public static LaunchEnvironment from(Map<String, String> env) {
        String[] rank = first(env, "JCCL_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID");
        String[] size = first(env, "JCCL_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS");
        if (rank == null && size == null) {
            throw new IllegalStateException("no rank and world size in the environment: set JCCL_RANK and "
                    + "JCCL_WORLD_SIZE (or RANK and WORLD_SIZE), or run under jccl launch, torchrun, mpirun or srun");
        }
        if (rank == null) {
            throw new IllegalStateException(size[0] + "=" + size[1] + " is set but no rank is: set "
                    + RANK_FOR.getOrDefault(size[0], "JCCL_RANK") + " too");
        }
        if (size == null) {
            throw new IllegalStateException(rank[0] + "=" + rank[1] + " is set but no world size is: set "
                    + SIZE_FOR.getOrDefault(rank[0], "JCCL_WORLD_SIZE") + " too");
        }
        String[] local = first(env, "JCCL_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID");
        String[] addr = first(env, "JCCL_MASTER_ADDR", "MASTER_ADDR");
        String[] port = first(env, "JCCL_MASTER_PORT", "MASTER_PORT");
        String[] transport = first(env, "JCCL_TRANSPORT");
        int r = parse(rank);
        int w = parse(size);
        if (w < 1) {
            throw new IllegalArgumentException(size[0] + " must be at least 1, got " + w);
        }
        if (r < 0 || r >= w) {
            throw new IllegalArgumentException(rank[0] + "=" + r + " is not a rank of a world of " + w + " ("
                    + size[0] + "): ranks are 0 to " + (w - 1));
        }
        return new LaunchEnvironment(r, w, local == null ? r : parse(local),
                addr == null ? null : addr[1], port == null ? -1 : parse(port),
                transport == null ? "auto" : transport[1].toLowerCase(java.util.Locale.ROOT));
    }

    private static final Map<String, String> RANK_FOR = Map.of("JCCL_WORLD_SIZE", "JCCL_RANK", "WORLD_SIZE", "RANK",
            "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "SLURM_NTASKS", "SLURM_PROCID");
    private static final Map<String, String> SIZE_FOR = Map.of("JCCL_RANK", "JCCL_WORLD_SIZE", "RANK", "WORLD_SIZE",
            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS");

    /** The first of {@code names} that is set, as {name, trimmed value}, or null. */
    static String[] first(Map<String, String> env, String... names) {
        for (String n : names) {
            String v = env.get(n);
            if (v != null && !v.isBlank()) {
                return new String[] {n, v.trim()};
            }
        }
        return null;
    }

    static int parse(String[] variable) {
        try {
            return Integer.parseInt(variable[1]);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("environment variable " + variable[0] + " is not a number: '"
                    + variable[1] + "'", e);
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

    /** The master's address, or null when the environment does not say. */
    public String masterAddr() {
        return masterAddr;
    }

    /** The master's port, or -1 when the environment does not say. */
    public int masterPort() {
        return masterPort;
    }

    /** {@code auto}, {@code tcp} or {@code shm} ({@code JCCL_TRANSPORT}). */
    public String transport() {
        return transport;
    }
}
