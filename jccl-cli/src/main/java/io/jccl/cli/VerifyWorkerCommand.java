package io.jccl.cli;

import io.jccl.Algorithm;
import io.jccl.verify.Verifier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;

/** One rank of {@code jccl verify --transport tcp}; started by the verify command, not by hand. */
@Command(name = "verify-worker", hidden = true)
public final class VerifyWorkerCommand implements Callable<Integer> {
    @Parameters(index = "0")
    Path dir;

    @Parameters(index = "1")
    String algorithm;

    @Parameters(index = "2")
    long timeoutMs;

    @Parameters(index = "3")
    int trafficCount;

    @Override
    public Integer call() throws Exception {
        return Verifier.worker(dir, Algorithm.valueOf(algorithm), Duration.ofMillis(timeoutMs), trafficCount);
    }
}
