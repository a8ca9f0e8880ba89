package io.jccl.cli;

import io.jccl.JcclSettings;
import io.jccl.store.TcpStoreServer;
import io.jccl.security.JobSecret;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/** {@code jccl store}: a standalone rendezvous store, for jobs whose ranks set {@code JCCL_STORE=external}. */
@Command(name = "store", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Serves the rendezvous store standalone until interrupted (torch's TCPStore master). Ranks "
            + "started with JCCL_STORE=external and JCCL_MASTER_ADDR/JCCL_MASTER_PORT pointing here use it instead "
            + "of starting one in rank 0. Clients must prove JCCL_SECRET.")
public final class StoreCommand implements Callable<Integer> {
    @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to listen on (default: "
            + "${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--port", defaultValue = "29500", description = "Port (default: ${DEFAULT-VALUE}).")
    int port;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (port < 0 || port > 65_535) {
            throw Options.usage(spec, "Invalid value for option '--port': " + port + " (0 to 65535)");
        }
        JobSecret secret = JobSecret.from(JcclSettings.fromEnvironment());
        if (secret.isEmpty()) {
            System.err.println("jccl store: " + JobSecret.ENV + " is not set: clients are not authenticated");
        }
        try (TcpStoreServer server = TcpStoreServer.start(host, port, secret)) {
            System.out.println("jccl store: serving on " + host + ":" + server.port());
            new CountDownLatch(1).await();
        }
        return 0;
    }
}
