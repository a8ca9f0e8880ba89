package io.jccl.verify;

import io.jccl.buffer.Buf;

import java.util.List;

/** jccl's result for one case: each rank's output (null where the rank has none), or the first error raised. */
final class Outcome {
    final List<Buf> outputs;
    final Throwable error;
    final String algorithm;

    Outcome(List<Buf> outputs, Throwable error, String algorithm) {
        this.outputs = outputs;
        this.error = error;
        this.algorithm = algorithm;
    }
}
