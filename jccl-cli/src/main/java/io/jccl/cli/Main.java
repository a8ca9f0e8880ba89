package io.jccl.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code jccl} command. */
@Command(name = "jccl", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Collective communications for the JVM.",
        subcommands = {VerifyCommand.class, LaunchCommand.class, TrainCommand.class, BenchCommand.class, TuneCommand.class,
            StoreCommand.class, AnalyzeCommand.class, VerifyWorkerCommand.class, TrainWorkerCommand.class, BenchWorkerCommand.class,
            CommandLine.HelpCommand.class})
public final class Main implements Runnable {

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Main.class.getPackage().getImplementationVersion();
            return new String[] {"jccl " + (v == null ? "dev" : v)};
        }
    }

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        System.setProperty("java.awt.headless", "true"); // plots are written to files
        System.exit(new CommandLine(new Main()).execute(args));
    }
}
