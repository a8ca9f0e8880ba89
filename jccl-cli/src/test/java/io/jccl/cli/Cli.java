package io.jccl.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertFalse;

/** The jccl command line run in this JVM as {@link Main#main} runs it, its stdout and stderr captured. */
final class Cli {
    final int status;
    final String out;
    final String err;

    private Cli(int status, String out, String err) {
        this.status = status;
        this.out = out;
        this.err = err;
    }

    static Cli run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        int status;
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            status = Main.commandLine().execute(args);
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
        return new Cli(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** Both streams, for assertion messages. */
    String both() {
        return "status " + status + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
    }

    /** No Java stack trace anywhere in what was printed. */
    static void assertNoStackTrace(String text) {
        assertFalse(text.contains("\tat "), text);
        assertFalse(text.contains("Exception in thread"), text);
        assertFalse(text.matches("(?s).*\\bat [\\w$.]+\\([\\w$]+\\.java:\\d+\\).*"), text);
    }
}
