package io.jccl.cli;

import io.jccl.JcclSettings;
import io.jccl.launch.Launcher;
import io.jccl.security.JobSecret;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code jccl launch}: starts the local ranks of a job. */
@Command(name = "launch", mixinStandardHelpOptions = true,
        description = {
            "Starts N ranks of CMD on this node with JCCL_RANK, JCCL_WORLD_SIZE, JCCL_LOCAL_RANK, "
                + "JCCL_MASTER_ADDR, JCCL_MASTER_PORT and a fresh job secret JCCL_SECRET set (a program calls "
                + "Jccl.fromEnvironment()). Output lines are prefixed with the rank. If a rank fails, the others are "
                + "stopped and jccl launch exits with that rank's status; an interrupt stops every rank.",
            "",
            "Example: jccl launch -n 4 -- java -cp jccl-cli/target/jccl.jar io.jccl.examples.AllReduceDemo"})
public final class LaunchCommand implements Callable<Integer> {

    @Option(names = {"-n", "--nproc-per-node"}, required = true, paramLabel = "N", description = "Ranks on this node.")
    int nproc;

    @Option(names = "--nnodes", defaultValue = "1", description = "Nodes in the job (default: ${DEFAULT-VALUE}).")
    int nnodes;

    @Option(names = "--node-rank", defaultValue = "0", description = "This node's index (default: ${DEFAULT-VALUE}).")
    int nodeRank;

    @Option(names = "--master-addr", defaultValue = "127.0.0.1",
            description = "Address of rank 0, which serves the rendezvous store (default: ${DEFAULT-VALUE}).")
    String masterAddr;

    @Option(names = "--master-port", defaultValue = "0",
            description = "Port of the rendezvous store; 0 picks a free one (single node only) "
                + "(default: ${DEFAULT-VALUE}).")
    int masterPort;

    @Option(names = "--transport", defaultValue = "auto",
            description = "JCCL_TRANSPORT for the ranks: auto (shared memory when every rank is on one host, else "
                + "TCP), shm or tcp (default: ${DEFAULT-VALUE}).")
    String transport;

    @Parameters(arity = "1..*", paramLabel = "CMD", description = "The program and its arguments, after --.")
    List<String> command;

    @Override
    public Integer call() throws Exception {
        JcclSettings settings = JcclSettings.fromEnvironment();
        // nodes of one job must share the secret: take it from the environment when set, else make one
        JobSecret secret = settings.secretHex() != null ? JobSecret.from(settings) : JobSecret.generate();
        if (nnodes > 1 && settings.secretHex() == null) {
            throw new IllegalArgumentException("with --nnodes > 1 every node must be given the same " + JobSecret.ENV
                    + " (hex), e.g. JCCL_SECRET=$(openssl rand -hex 32)");
        }
        return new Launcher(nproc, nnodes, nodeRank, masterAddr, masterPort, transport, secret, command, Map.of(),
                System.out, settings.shmDirectory()).run();
    }
}
