package io.jccl.cli;

import picocli.CommandLine;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * How a command that fails at run time (not a usage error: those are picocli's one line and the usage, exit
 * status 2) reports it: one line {@code jccl CMD: what went wrong}, a line per cause, exit status 1; the Java
 * stack trace only with {@code --stacktrace}. The message of a failure often quotes the log of worker processes:
 * their stack frames are left out of it too. The hidden worker commands, whose output only goes to such logs,
 * always print the whole trace there.
 */
final class Failure implements CommandLine.IExecutionExceptionHandler {
    /** The option, on every command, that asks for the Java stack trace of a failure. */
    static final String STACKTRACE = "--stacktrace";

    /** A stack frame or a frame summary, possibly prefixed with the rank by the launcher. */
    private static final Pattern FRAME = Pattern.compile(
            "^(\\[rank \\d+\\] )?\\s*(at [\\w$./<>-]+\\(.*\\)|\\.\\.\\. \\d+ (more|common frames omitted))\\s*$");
    /** The JVM's prefix of an uncaught exception: the exception's own line follows it. */
    private static final Pattern UNCAUGHT = Pattern.compile("Exception in thread \"[^\"]*\" ");

    @Override
    public int handleExecutionException(Exception ex, CommandLine cmd, CommandLine.ParseResult parsed) {
        PrintWriter err = cmd.getErr();
        if (stacktraceAsked(parsed) || cmd.getCommandSpec().usageMessage().hidden()) {
            ex.printStackTrace(err);
        } else {
            for (String line : summary(cmd.getCommandSpec().qualifiedName(), ex)) {
                err.println(line);
            }
        }
        err.flush();
        return cmd.getCommandSpec().exitCodeOnExecutionException();
    }

    private static boolean stacktraceAsked(CommandLine.ParseResult parsed) {
        for (CommandLine.ParseResult p = parsed; p != null; p = p.subcommand()) {
            if (p.hasMatchedOption(STACKTRACE)) {
                return true;
            }
        }
        return false;
    }

    /** The lines that report {@code ex}: {@code command: message}, then {@code   caused by: ...} per cause. */
    static List<String> summary(String command, Throwable ex) {
        List<String> lines = new ArrayList<>();
        lines.add(command + ": " + describe(ex));
        Map<Throwable, Boolean> seen = new IdentityHashMap<>();
        seen.put(ex, true);
        String last = ex.getMessage();
        for (Throwable c = ex.getCause(); c != null && seen.put(c, true) == null; c = c.getCause()) {
            // a cause whose message the wrapper already repeats adds nothing
            if (last != null && c.getMessage() != null && last.contains(c.getMessage())) {
                continue;
            }
            lines.add("  caused by: " + describe(c));
            last = c.getMessage();
        }
        lines.add("(" + STACKTRACE + " prints the Java stack trace)");
        return lines;
    }

    /** The message without stack frames; the exception's simple name where its type says more than the message. */
    static String describe(Throwable t) {
        String msg = t.getMessage();
        if (msg == null || msg.isBlank()) {
            return t.getClass().getSimpleName();
        }
        StringBuilder sb = new StringBuilder();
        for (String line : msg.split("\\R")) {
            if (FRAME.matcher(line).matches()) {
                continue;
            }
            if (sb.length() > 0) {
                sb.append(System.lineSeparator());
            }
            sb.append(UNCAUGHT.matcher(line).replaceFirst(""));
        }
        // jccl's own exceptions, and the two it throws for wrong arguments and states, say what happened
        boolean plain = t instanceof IllegalArgumentException || t instanceof IllegalStateException
                || t.getClass().getName().startsWith("io.jccl.");
        return plain ? sb.toString() : t.getClass().getSimpleName() + ": " + sb;
    }
}
