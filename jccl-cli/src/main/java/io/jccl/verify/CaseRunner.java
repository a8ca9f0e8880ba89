package io.jccl.verify;

import java.io.IOException;
import java.util.List;

/** Runs a batch of cases of one world size on jccl: ranks as threads, or as processes over a real transport. */
interface CaseRunner extends AutoCloseable {

    /**
     * Runs every case and hands each outcome to {@code sink} in case order, as soon as it is known, so that a
     * batch's outputs are never all held at once.
     */
    void runAll(List<VerifyCase> cases, OutcomeSink sink) throws IOException, InterruptedException;

    /** Receives one case's outcome. */
    @FunctionalInterface
    interface OutcomeSink {
        void accept(VerifyCase c, Outcome o) throws IOException;
    }

    /** The byte-counter table for a float32 buffer of {@code count} elements, measured the same way. */
    List<TrafficLaw.Row> traffic(int count) throws IOException, InterruptedException;

    @Override
    void close();
}
