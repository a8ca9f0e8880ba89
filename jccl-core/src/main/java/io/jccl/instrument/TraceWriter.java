package io.jccl.instrument;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The bandwidth trace: one JSON object per line per operation, per rank (seed exercise 4). The schema is in
 * {@code docs/trace.md}. Thread-safe; each line is flushed, so a trace survives a crash up to the last operation.
 */
public final class TraceWriter implements AutoCloseable {
    private final BufferedWriter out;
    private final Path path;

    private TraceWriter(Path path) throws IOException {
        this.path = path;
        Path parent = path.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        this.out = Files.newBufferedWriter(path, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
    }

    /**
     * The trace file of {@code rank} for a prefix: {@code <prefix>.rank<r>.jsonl}, created with its directories
     * if missing, appended to otherwise.
     *
     * @param prefix the path of the trace files without the rank suffix ({@code JCCL_TRACE})
     * @param rank the rank whose file this is
     * @return a writer appending to the file
     * @throws UncheckedIOException if the file cannot be opened
     */
    public static TraceWriter open(String prefix, int rank) {
        try {
            return new TraceWriter(Path.of(prefix + ".rank" + rank + ".jsonl"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the trace " + prefix + ".rank" + rank + ".jsonl", e);
        }
    }

    /**
     * The file this writer appends to.
     *
     * @return the path
     */
    public Path path() {
        return path;
    }

    /**
     * Appends one record (a complete JSON object, without a newline) and flushes it.
     *
     * @param json the record
     * @throws UncheckedIOException if the write fails
     */
    public synchronized void write(String json) {
        try {
            out.write(json);
            out.newLine();
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the trace " + path, e);
        }
    }

    /**
     * A JSON string literal.
     *
     * @param s any string
     * @return {@code s} in double quotes, with quotes, backslashes and control characters escaped
     */
    public static String quote(String s) {
        return appendQuoted(new StringBuilder(s.length() + 2), s).toString();
    }

    private static StringBuilder appendQuoted(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"');
    }

    /**
     * A new record: one JSON object, written field by field in order.
     *
     * @return an empty record
     */
    public static Record record() {
        return new Record();
    }

    /**
     * One JSON object under construction: names and string values are escaped ({@link #quote}), numbers written
     * as Java prints them, fields in the order added. {@link #toString()} is the object.
     */
    public static final class Record {
        private final StringBuilder b = new StringBuilder(384).append('{');

        private Record() {
        }

        private StringBuilder name(String name) {
            if (b.length() > 1) {
                b.append(',');
            }
            return appendQuoted(b, name).append(':');
        }

        /**
         * A number field.
         *
         * @param name the field's name
         * @param value its value
         * @return this record
         */
        public Record field(String name, long value) {
            name(name).append(value);
            return this;
        }

        /**
         * A string field; null is written as JSON null.
         *
         * @param name the field's name
         * @param value its value, or null
         * @return this record
         */
        public Record field(String name, String value) {
            StringBuilder at = name(name);
            if (value == null) {
                at.append("null");
            } else {
                appendQuoted(at, value);
            }
            return this;
        }

        /**
         * Fields that are JSON already ({@code "a":1,"b":[2]}, without braces), such as a call's traffic from
         * {@code CollectiveCall.trafficJson()}.
         *
         * @param json the fields, comma-separated
         * @return this record
         */
        public Record fields(String json) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append(json);
            return this;
        }

        /**
         * The JSON object.
         *
         * @return the fields added so far, in braces
         */
        @Override
        public String toString() {
            return b + "}";
        }
    }

    /**
     * Closes the file.
     *
     * @throws UncheckedIOException if closing fails
     */
    @Override
    public synchronized void close() {
        try {
            out.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
