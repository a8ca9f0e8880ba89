package io.jccl.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** The {@code jccl} command. */
@Command(name = "jccl", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Collective communications for the JVM.",
        footer = {"", "Exit status: 0 on success; 1 when the work fails or a check does not pass; 2 for a usage error "
            + "(a wrong option or value: one line and the usage); launch: see jccl launch --help. A failure is one "
            + "line per cause; " + Failure.STACKTRACE + " adds the Java stack trace. verify, bench, train and tune "
            + "report their progress on stderr; stdout has only their tables (or JSON)."},
        subcommands = {VerifyCommand.class, LaunchCommand.class, TrainCommand.class, BenchCommand.class, TuneCommand.class,
            StoreCommand.class, AnalyzeCommand.class, VerifyWorkerCommand.class, TrainWorkerCommand.class, BenchWorkerCommand.class,
            CommandLine.HelpCommand.class})
public final class Main implements Runnable {

    /**
     * {@code jccl VERSION}, shared by every command's {@code -V}: the version Maven records in the jar
     * ({@code META-INF/maven/io.jccl/jccl-cli/pom.properties}), else the manifest's Implementation-Version, else
     * {@code dev} (run from the build's classes, before the jar is made).
     */
    public static final class Version implements CommandLine.IVersionProvider {
        /** Where Maven's jar plugin puts the module's coordinates. */
        static final String POM_PROPERTIES = "/META-INF/maven/io.jccl/jccl-cli/pom.properties";

        @Override
        public String[] getVersion() throws IOException {
            try (InputStream in = Main.class.getResourceAsStream(POM_PROPERTIES)) {
                return new String[] {"jccl " + version(in, Main.class.getPackage().getImplementationVersion())};
            }
        }

        /** The version in {@code pomProperties} (null: none), else {@code implementationVersion}, else dev. */
        static String version(InputStream pomProperties, String implementationVersion) throws IOException {
            if (pomProperties != null) {
                Properties p = new Properties();
                p.load(pomProperties);
                String v = p.getProperty("version");
                if (v != null && !v.isBlank()) {
                    return v.trim();
                }
            }
            return implementationVersion == null || implementationVersion.isBlank() ? "dev" : implementationVersion;
        }
    }

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @CommandLine.Option(names = Failure.STACKTRACE, scope = CommandLine.ScopeType.INHERIT,
            description = "On a failure, also print the Java stack trace.")
    boolean stacktrace;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /** The command line as {@link #main} runs it: failures reported by {@link Failure}. */
    public static CommandLine commandLine() {
        return new CommandLine(new Main()).setExecutionExceptionHandler(new Failure());
    }

    public static void main(String[] args) {
        System.setProperty("java.awt.headless", "true"); // plots are written to files
        System.exit(commandLine().execute(args));
    }
}
