package io.jccl.verify;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jccl.buffer.Buf;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The real torch.distributed gloo backend, driven through {@code gloo_reference.py}: one batch of cases per world
 * size (torch costs seconds to start), inputs and outputs exchanged as raw files in a temporary directory.
 */
public final class GlooReference {
    /** Environment variable naming the Python interpreter that has torch. */
    public static final String PYTHON_ENV = "JCCL_TORCH_PYTHON";
    public static final String PYTHON_DEFAULT = "/usr/bin/python3";
    public static final String INSTALL_HINT = "apt-get install -y python3-torch";

    private static final ObjectMapper JSON = new ObjectMapper();

    private final String python;
    private final String torchVersion;

    private GlooReference(String python, String torchVersion) {
        this.python = python;
        this.torchVersion = torchVersion;
    }

    /** The interpreter to use: {@code $JCCL_TORCH_PYTHON}, else {@code /usr/bin/python3}. */
    public static String pythonPath() {
        return io.jccl.JcclSettings.fromEnvironment().torchPython();
    }

    /**
     * How long the probe may take: importing torch takes seconds, a minute on a slow disk; an interpreter that hangs
     * (a wrapper waiting on something, an import stuck on a network file system) must not hang the command.
     */
    public static final Duration PROBE_LIMIT = Duration.ofSeconds(120);

    /** Probes for torch; returns null (with the reason in {@code why[0]}) when it cannot be imported. */
    public static GlooReference find(String[] why) {
        return find(pythonPath(), PROBE_LIMIT, why);
    }

    /**
     * Probes {@code py} for torch, for at most {@code limit}: past it the interpreter and every process it started
     * are killed and the answer is null, {@code why[0]} saying it did not answer. The interpreter is a process of a
     * {@link io.jccl.launch.WorkDir}, whose output goes to the directory's log: when this JVM exits during the probe
     * (SIGTERM, Ctrl-C), the interpreter and what it started are killed too.
     */
    public static GlooReference find(String py, Duration limit, String[] why) {
        io.jccl.launch.WorkDir work;
        try {
            work = io.jccl.launch.WorkDir.create("jccl-torch-probe-");
        } catch (IOException e) {
            why[0] = "no directory for the probe of " + py + " (" + e.getMessage() + ")";
            return null;
        }
        try {
            Process p = work.start(new ProcessBuilder(py, "-c", "import torch, torch.distributed as d; "
                    + "assert d.is_available() and d.is_gloo_available(); print(torch.__version__)")
                    .redirectErrorStream(true).redirectOutput(work.log().toFile()));
            p.getOutputStream().close();
            if (!io.jccl.launch.ProcessTree.waitFor(p, limit)) {
                why[0] = py + " did not answer within " + limit.toSeconds() + " s";
                return null;
            }
            // a file, not a pipe: what a process it left running holds open does not delay the answer
            String out = new String(Files.readAllBytes(work.log()), StandardCharsets.UTF_8).trim();
            String[] lines = out.split("\n");
            if (p.exitValue() != 0) {
                why[0] = "torch with gloo is not importable by " + py + " (" + lines[lines.length - 1] + ")";
                return null;
            }
            return new GlooReference(py, lines[lines.length - 1].trim());
        } catch (IOException e) {
            why[0] = py + " cannot be run (" + e.getMessage() + ")";
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            why[0] = "interrupted";
            return null;
        } finally {
            // the probe's processes are killed first; a directory that will not go away is not "no torch"
            closeWarning(work);
        }
    }

    /** Closes {@code work}, a failure to remove it being a warning on stderr: what it held is already read. */
    private static void closeWarning(io.jccl.launch.WorkDir work) {
        try {
            work.close();
        } catch (IOException e) {
            System.err.println("jccl: could not remove " + work.path() + " (" + e.getMessage() + ")");
        }
    }

    public String torchVersion() {
        return torchVersion;
    }

    /** What gloo produced for one case; its outputs are read from disk when asked for. */
    public static final class Result {
        final boolean rejected;
        final String reference;
        final String message;
        private final Path dir;
        private final VerifyCase c;

        Result(boolean rejected, String reference, String message, Path dir, VerifyCase c) {
            this.rejected = rejected;
            this.reference = reference;
            this.message = message;
            this.dir = dir;
            this.c = c;
        }

        /** Each rank's output (null where a rank has none). */
        List<Buf> outputs() throws IOException {
            List<Buf> outputs = new java.util.ArrayList<>();
            for (int r = 0; r < c.world(); r++) {
                Path f = dir.resolve("out_" + c.id() + "_" + r + ".bin");
                outputs.add(!rejected && c.hasOutput(r) ? BufIO.read(f, c.dtype(), c.outputCount()) : null);
            }
            return outputs;
        }
    }

    /** The results of one launch; closing it deletes their files. */
    public static final class Batch implements AutoCloseable {
        private final io.jccl.launch.WorkDir work;
        private final Map<Integer, Result> results;

        Batch(io.jccl.launch.WorkDir work, Map<Integer, Result> results) {
            this.work = work;
            this.results = results;
        }

        public Result get(int caseId) {
            return results.get(caseId);
        }

        @Override
        public void close() throws IOException {
            work.close();
        }
    }

    /** Runs every case (all of one world size) in one torch launch. */
    public Batch run(int world, List<VerifyCase> cases, Duration timeout) throws IOException,
            InterruptedException {
        io.jccl.launch.WorkDir work = io.jccl.launch.WorkDir.create("jccl-gloo-");
        Path dir = work.path();
        boolean ok = false;
        try {
            CaseFile.write(dir, world, cases);
            for (VerifyCase c : cases) {
                for (int r = 0; r < world; r++) {
                    BufIO.write(c.input(r), dir.resolve("in_" + c.id() + "_" + r + ".bin"));
                }
            }
            Path script = dir.resolve("gloo_reference.py");
            try (InputStream in = GlooReference.class.getResourceAsStream("gloo_reference.py")) {
                Files.copy(in, script, StandardCopyOption.REPLACE_EXISTING);
            }
            Path log = work.log();
            Process p = work.start(new ProcessBuilder(python, script.toString(), dir.toString())
                    .redirectErrorStream(true).redirectOutput(log.toFile()));
            if (!io.jccl.launch.ProcessTree.waitFor(p, timeout)) {
                throw new IOException("gloo reference did not finish within " + timeout.toSeconds() + " s: "
                        + work.logTail(15));
            }
            if (p.exitValue() != 0 || !Files.exists(dir.resolve("results.json"))) {
                throw new IOException("gloo reference failed (exit " + p.exitValue() + "): " + work.logTail(15));
            }
            JsonNode res = JSON.readTree(dir.resolve("results.json").toFile()).get("cases");
            Map<Integer, Result> out = new HashMap<>();
            for (VerifyCase c : cases) {
                JsonNode n = res.get(Integer.toString(c.id()));
                if (n == null) {
                    throw new IOException("gloo reference reported nothing for case " + c.id());
                }
                boolean rejected = "rejected".equals(n.get("status").asText());
                out.put(c.id(), new Result(rejected, n.get("reference").asText(),
                        n.has("message") ? n.get("message").asText() : null, dir, c));
            }
            for (VerifyCase c : cases) {
                for (int r = 0; r < world; r++) {
                    Files.deleteIfExists(dir.resolve("in_" + c.id() + "_" + r + ".bin"));
                }
            }
            ok = true;
            return new Batch(work, out);
        } finally {
            if (!ok) {
                closeWarning(work); // the failure itself is what the caller must hear
            }
        }
    }
}
