package com.example.consumer;

import io.jccl.Communicator;
import io.jccl.Jccl;
import io.jccl.ProcessGroupOptions;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * One rank of a job of processes, formed as torch's {@code init_process_group} forms one: run it once per rank
 * with the same init method and world size. Sums the ranks with an allreduce, shares a string of a different
 * length per rank with allGatherV, and exits 1 when either is wrong.
 */
public final class ProcessGroupSum {
    private ProcessGroupSum() {
    }

    /**
     * Joins the job and checks what the collectives give.
     *
     * @param args the init method ({@code file:///dir}, {@code tcp://host:port} or {@code env://}), this rank and
     *             the world size
     */
    public static void main(String[] args) {
        String init = args[0];
        int rank = Integer.parseInt(args[1]);
        int world = Integer.parseInt(args[2]);
        try (Communicator comm = Jccl.initProcessGroup(ProcessGroupOptions.of(init).withRank(rank)
                .withWorldSize(world).withTimeout(Duration.ofMinutes(1)))) {
            int[] sum = {rank, 1};
            comm.allReduce(sum);
            byte[][] names = comm.allGatherV(("rank-" + rank + "-" + "x".repeat(rank))
                    .getBytes(StandardCharsets.UTF_8));
            StringBuilder all = new StringBuilder();
            for (byte[] n : names) {
                all.append(new String(n, StandardCharsets.UTF_8)).append(' ');
            }
            int expected = world * (world - 1) / 2;
            if (sum[0] != expected || sum[1] != world || names.length != world
                    || !new String(names[world - 1], StandardCharsets.UTF_8).endsWith("x".repeat(world - 1))) {
                System.out.println("ProcessGroupSum: FAIL: rank " + rank + " got " + sum[0] + ", " + sum[1] + ", "
                        + all);
                System.exit(1);
            }
            System.out.println("ProcessGroupSum: rank " + rank + " of " + world + " over " + comm.transportName()
                    + ": sum of ranks = " + sum[0] + ", allGatherV = " + all.toString().trim() + "; " + Where.jccl());
        }
    }
}
