package io.jccl.verify;

import java.io.IOException;
import java.util.List;
import java.util.Map;

/** Runs a batch of cases of one world size on jccl: ranks as threads, or as processes over a real transport. */
interface CaseRunner extends AutoCloseable {

    /** Outcome per case id. */
    Map<Integer, Outcome> runAll(List<VerifyCase> cases) throws IOException, InterruptedException;

    /** The byte-counter table for a float32 buffer of {@code count} elements, measured the same way. */
    List<TrafficLaw.Row> traffic(int count) throws IOException, InterruptedException;

    @Override
    void close();
}
