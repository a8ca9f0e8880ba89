package io.jccl.it;

import io.jccl.CollectiveOptions;
import io.jccl.Communicator;
import io.jccl.CommunicatorConfig;
import io.jccl.Jccl;
import io.jccl.JcclException;
import io.jccl.ReduceOp;
import io.jccl.Tensor;

import java.time.Duration;

/**
 * A rank for the fault tests, started as its own JVM. Mode (first argument):
 * {@code ok}: allreduces; {@code allgather}: allgathers; {@code exit}: rank {@code victim} exits with status 3 before the first one;
 * {@code kill}: rank {@code victim} kills itself with SIGKILL in the middle of the allreduces; {@code abort}: rank
 * {@code victim} calls {@code abort} between two of them (printing {@code ABORT <epoch ms>} first);
 * {@code kill-hierarchical}: the same in the middle of 16 MiB HIERARCHICAL allreduces (pipelined in 4 chunks where
 * the tuning file says the link between hosts is the limit);
 * {@code stall}: rank {@code victim} sleeps instead of joining; {@code close}: another thread of rank
 * {@code victim} closes its communicator while it is in the allreduces; {@code freeze}: rank {@code victim} stops
 * itself (SIGSTOP) in the middle of small allreduces; {@code freeze-big}: rank 0 sends it 64 MiB messages
 * (more than the sockets' buffers hold), and it stops itself before it receives the sixth; the other ranks do
 * nothing; {@code slow}: rank {@code victim} sleeps 300 ms before each allreduce, so the others wait (and watch it). The victim of {@code kill} prints
 * {@code KILL <epoch ms>} first. Survivors print {@code DETECTED <epoch ms>} and one line
 * {@code RESULT <exception class> origin=<rank> peer=<rank> message} and exit 0, or {@code RESULT ok}. With
 * {@code FAULT_TUNE_TEXT} ({@code key=value} pairs separated by {@code ;}) the rank's program gives AUTO's parameters.
 */
public final class FaultWorker {
    private FaultWorker() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int victim = Integer.parseInt(args[1]);
        long timeoutMs = Long.parseLong(args[2]);
        // stall: deadlines grow with the rank, so the rank that waits on the staller directly (rank 0 in a ring
        // that flows from r+1 to r, for victim 1) is the one that times out, and it names the staller
        int envRank = Integer.parseInt(System.getenv("JCCL_RANK"));
        long myTimeoutMs = mode.equals("stall") ? timeoutMs * (1 + envRank) : timeoutMs;
        CommunicatorConfig config = CommunicatorConfig.fromEnvironment().withTimeout(Duration.ofMillis(myTimeoutMs));
        String given = System.getenv("FAULT_TUNE_TEXT"); // AUTO's parameters as this rank's program gives them
        if (given != null) {
            config = config.withTuneParameters(given.replace(';', '\n'));
        }
        Communicator comm = Jccl.fromEnvironment(config);
        int rank = comm.rank();
        System.out.println("TRANSPORT " + comm.transportName());
        System.out.println("READY rank " + rank + " pid " + ProcessHandle.current().pid());
        if (rank == victim) {
            switch (mode) {
                case "exit":
                    System.exit(3);
                    break;
                case "stall":
                    Thread.sleep(600_000);
                    break;
                default:
                    break;
            }
        }
        if (mode.equals("close") && rank == victim) {
            Thread closer = new Thread(() -> {
                try {
                    Thread.sleep(300);
                } catch (InterruptedException ignored) {
                    return;
                }
                comm.close();
            });
            closer.setDaemon(true);
            closer.start();
        }
        int calls = mode.equals("close") ? 100_000 : 200;
        try {
            for (int i = 0; i < calls; i++) {
                if (mode.startsWith("freeze") && rank == victim && i == 5) {
                    System.out.println("FREEZE " + System.currentTimeMillis());
                    System.out.flush();
                    new ProcessBuilder("kill", "-STOP", Long.toString(ProcessHandle.current().pid())).start();
                    Thread.sleep(600_000);
                }
                if (mode.equals("abort") && rank == victim && i == 5) {
                    System.out.println("ABORT " + System.currentTimeMillis());
                    comm.abort("rank " + rank + " gives up");
                    Thread.sleep(8_000); // its peers hear of it from the abort, not from its leaving
                }
                if (mode.startsWith("kill") && rank == victim && i == 5) {
                    System.out.println("KILL " + System.currentTimeMillis());
                    System.out.flush();
                    new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).start().waitFor();
                    Thread.sleep(10_000);
                }
                if (mode.equals("slow") && rank == victim) {
                    if (i >= 8) {
                        break;
                    }
                    Thread.sleep(300);
                }
                if (mode.equals("slow") && rank != victim && i >= 8) {
                    break;
                }
                if (mode.equals("allgather")) {
                    comm.allGather(Tensor.of(new float[1024]), Tensor.of(new float[1024 * comm.size()]));
                } else if (mode.equals("freeze-big")) {
                    if (rank == 0) {
                        comm.send(Tensor.of(new float[16 << 20]), victim, 0);
                    } else if (rank == victim) {
                        comm.recv(Tensor.of(new float[16 << 20]), 0, 0);
                    }
                } else if (mode.equals("kill-hierarchical")) {
                    comm.allReduce(Tensor.of(new float[4 << 20]), ReduceOp.SUM,
                            CollectiveOptions.DEFAULT.withAlgorithm(io.jccl.Algorithm.HIERARCHICAL));
                } else {
                    comm.allReduce(Tensor.of(new float[1 << 16]), ReduceOp.SUM, CollectiveOptions.DEFAULT);
                }
            }
            System.out.println("RESULT ok");
        } catch (JcclException e) {
            System.out.println("DETECTED " + System.currentTimeMillis());
            int origin = e instanceof io.jccl.PeerAbortedException ? ((io.jccl.PeerAbortedException) e).originRank()
                    : -1;
            int peer = e instanceof io.jccl.CollectiveTimeoutException
                    ? ((io.jccl.CollectiveTimeoutException) e).peer() : -1;
            System.out.println("RESULT " + e.getClass().getSimpleName() + " origin=" + origin + " peer=" + peer + " "
                    + e.getMessage());
        }
        comm.close();
        System.exit(0);
    }
}
