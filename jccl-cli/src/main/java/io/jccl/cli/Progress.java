package io.jccl.cli;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Progress of a long command, on stderr (stdout keeps exactly the tables and JSON it had): on a terminal one line
 * that updates in place (carriage return) with a bar; otherwise one line per finished step, flushed at once, so
 * that a log shows how far the run got. {@link #wrote} reports a file written, in both cases.
 */
final class Progress {
    /** Width of the terminal line, bar and text. */
    static final int WIDTH = 79;
    private static final int BAR = 20;

    private final PrintStream err;
    private final boolean terminal;
    private final String command;
    private final long start = System.nanoTime();
    /** Characters of the line now on the terminal, 0 when none. */
    private int drawn;

    Progress(PrintStream err, boolean terminal, String command) {
        this.err = err;
        this.terminal = terminal;
        this.command = command;
    }

    /** Progress of {@code command} on {@code System.err}, as a line in place when stderr is a terminal. */
    static Progress of(String command) {
        return new Progress(System.err, onTerminal(), command);
    }

    /**
     * Whether stderr, where progress goes, is a terminal: on Linux, where {@code /proc/self/fd/2} leads; elsewhere
     * whether stdin and stdout are ({@link #consoleIsTerminal}, all the JDK tells). The JDK's answer alone was
     * wrong for {@code jccl bench 2>bench.log} from a terminal: the log filled with carriage returns and bars.
     */
    static boolean onTerminal() {
        String target;
        try {
            target = java.nio.file.Files.readSymbolicLink(java.nio.file.Path.of("/proc/self/fd/2")).toString();
        } catch (java.io.IOException | UnsupportedOperationException | SecurityException e) {
            target = null; // no /proc: not Linux
        }
        return onTerminal(target, System.getenv("TERM"), Progress::consoleIsTerminal);
    }

    /**
     * The decision of {@link #onTerminal()}: a terminal when {@code stderr} (what file descriptor 2 leads to; null
     * when unknown, then {@code fallback} decides) is a terminal device ({@code /dev/pts/N}, {@code /dev/tty...},
     * {@code /dev/console}), never when {@code term} is {@code dumb}.
     */
    static boolean onTerminal(String stderr, String term, java.util.function.BooleanSupplier fallback) {
        if ("dumb".equals(term)) {
            return false;
        }
        if (stderr == null) {
            return fallback.getAsBoolean();
        }
        return stderr.matches("/dev/pts/\\d+|/dev/tty.*|/dev/console");
    }

    /**
     * Whether stdin and stdout are a terminal ({@code System.console()}; on JDK 22 and later, where it also returns
     * a console when they are redirected, that console's {@code isTerminal()}).
     */
    static boolean consoleIsTerminal() {
        java.io.Console console = System.console();
        if (console == null) {
            return false;
        }
        try {
            return (Boolean) java.io.Console.class.getMethod("isTerminal").invoke(console);
        } catch (ReflectiveOperationException e) {
            return true; // before JDK 22 a console exists only on a terminal
        }
    }

    /** Work under way, the {@code done}-th of {@code total} steps finished ({@code total} 0: unknown). */
    synchronized void update(int done, int total, String what) {
        if (terminal) {
            draw(done, total, what);
        }
    }

    /** A step finished: on a terminal the line in place, otherwise a line of its own. */
    synchronized void step(int done, int total, String what) {
        if (terminal) {
            draw(done, total, what);
        } else {
            err.println(text(done, total, what));
            err.flush();
        }
    }

    /** A file was written. */
    synchronized void wrote(Object file) {
        line("wrote " + file);
    }

    /** A line that stays, above the progress line on a terminal. */
    synchronized void line(String text) {
        clear();
        err.println(text);
        err.flush();
    }

    /** Removes the line in place (before stdout prints below it, and at the end). */
    synchronized void clear() {
        if (terminal && drawn > 0) {
            err.print("\r" + " ".repeat(drawn) + "\r");
            err.flush();
            drawn = 0;
        }
    }

    private void draw(int done, int total, String what) {
        String line = total > 0 ? bar(done, total) + " " + text(done, total, what) : text(done, total, what);
        if (line.length() > WIDTH) {
            line = line.substring(0, WIDTH - 3) + "...";
        }
        err.print("\r" + line + " ".repeat(Math.max(0, drawn - line.length())));
        if (drawn > line.length()) {
            err.print("\r" + line);
        }
        err.flush();
        drawn = line.length();
    }

    private static String bar(int done, int total) {
        int full = (int) ((long) BAR * Math.min(done, total) / total);
        return "[" + "#".repeat(full) + "-".repeat(BAR - full) + "]";
    }

    /** {@code jccl verify: 48/232 all_reduce, world 4 done (12 s)}. */
    String text(int done, int total, String what) {
        long s = (System.nanoTime() - start) / 1_000_000_000L;
        return String.format(Locale.ROOT, "%s: %s%s (%d s)", command, total > 0 ? done + "/" + total + " " : "", what, s);
    }
}
