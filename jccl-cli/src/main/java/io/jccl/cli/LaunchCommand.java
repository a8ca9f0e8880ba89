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
@Command(name = "launch", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {
            "Starts N ranks of CMD on this node with JCCL_RANK, JCCL_WORLD_SIZE, JCCL_LOCAL_RANK, "
                + "JCCL_LOCAL_WORLD_SIZE (N), JCCL_MASTER_ADDR, JCCL_MASTER_PORT, JCCL_TRANSPORT (--transport) and "
                + "the job secret JCCL_SECRET set (a program calls Jccl.fromEnvironment()). The secret is this "
                + "environment's JCCL_SECRET (hex) when set, else a fresh one; with --nnodes > 1 it must be set, the "
                + "same on every node (e.g. JCCL_SECRET=$(openssl rand -hex 32)). Output lines are prefixed with the "
                + "rank. If a rank fails, the others are stopped and jccl launch exits with that rank's status; an "
                + "interrupt stops every rank.",
            "",
            "Exit status: 0 when every rank exits 0, else the status of the first rank that failed; 2 for a usage "
                + "error; as a shell, 127 when CMD is not found and 126 when it is not executable (nothing is "
                + "started then).",
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

    @Option(names = "--transport", defaultValue = "auto", paramLabel = "auto|shm|tcp",
            converter = Options.LaunchTransport.class,
            description = "JCCL_TRANSPORT for the ranks: auto (shared memory between ranks that prove they share a "
                + "host, TCP between the others), shm or tcp (default: ${DEFAULT-VALUE}).")
    String transport;

    @Option(names = "--cpu-bind", defaultValue = "core", paramLabel = "core|none",
            converter = Options.CpuBind.class,
            description = "core: each rank on a CPU of its own (taskset -c), as mpirun binds by default, while the "
                + "ranks do not outnumber the CPUs and taskset is on the PATH; none: unbound "
                + "(default: ${DEFAULT-VALUE}).")
    Launcher.CpuBinding cpuBind;

    @Parameters(arity = "1..*", paramLabel = "CMD", description = "The program and its arguments, after --.")
    List<String> command;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        Options.atLeast(spec, "-n", nproc, 1);
        Options.atLeast(spec, "--nnodes", nnodes, 1);
        if (nodeRank < 0 || nodeRank >= nnodes) {
            throw Options.usage(spec, "Invalid value for option '--node-rank': " + nodeRank + " (it must be 0 to "
                    + "--nnodes - 1 = " + (nnodes - 1) + ")");
        }
        if (masterPort < 0 || masterPort > 65_535) {
            throw Options.usage(spec, "Invalid value for option '--master-port': " + masterPort + " (0 to 65535)");
        }
        if (masterPort == 0 && nnodes > 1) {
            throw Options.usage(spec, "--master-port is required with more than one node");
        }
        JcclSettings settings = JcclSettings.fromEnvironment();
        if (nnodes > 1 && settings.secretHex() == null) {
            throw Options.usage(spec, "with --nnodes > 1 every node must be given the same " + JobSecret.ENV
                    + " (hex), e.g. JCCL_SECRET=$(openssl rand -hex 32)");
        }
        String program = command.get(0);
        Launcher.Program found = Launcher.Program.find(program, System.getenv("PATH"));
        if (found != Launcher.Program.FOUND) {
            System.err.println("jccl launch: " + program + ": " + found.message);
            return found.status;
        }
        // nodes of one job must share the secret: take it from the environment when set, else make one
        JobSecret secret = settings.secretHex() != null ? JobSecret.from(settings) : JobSecret.generate();
        return new Launcher(nproc, nnodes, nodeRank, masterAddr, masterPort, transport, secret, command, Map.of(),
                System.out, settings.shmDirectory()).cpuBinding(cpuBind).run();
    }
}
