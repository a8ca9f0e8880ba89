/**
 * jccl's core: the communicator API, its algorithms, transports and instrumentation.
 *
 * <p>The public API is package {@link io.jccl} (the entry point {@link io.jccl.Jccl}, {@link io.jccl.Communicator},
 * {@link io.jccl.Tensor}, the options and the exceptions) and package {@link io.jccl.instrument}, whose
 * {@link io.jccl.instrument.TrafficCounters} {@link io.jccl.Communicator#counters()} returns. Only these two
 * packages are exported to every module, and only they are in the Javadoc.
 *
 * <p>The other packages listed below are exported only to jccl's command-line tool, module {@code io.jccl.cli},
 * which uses a few internal classes (the verification engine, the benchmark, the launcher); they carry no
 * compatibility promise. The packages not listed (the transports, the algorithms' steps, the rendezvous, ...) are
 * not exported at all, nor is {@code io.jccl.diag} (the flight recorder, the {@code JCCL_DEBUG} log and the JFR
 * event: {@code Communicator} hands out the record as JSON). ({@code io.jccl.train} uses the public API only.)
 *
 * <p>Logging goes through SLF4J ({@code org.slf4j}); jccl ships no logging provider: add one to the
 * application (the README's "Logging" section says which).
 */
@SuppressWarnings("module") // the qualified exports name jccl's other modules, which are not on this module's path
module io.jccl.core {
    requires org.slf4j;
    requires jdk.jfr; // io.jccl.diag.CallEvent, the JFR event of every call

    exports io.jccl;
    exports io.jccl.instrument;

    exports io.jccl.algorithm to io.jccl.cli;
    exports io.jccl.buffer to io.jccl.cli;
    exports io.jccl.pipeline to io.jccl.cli;
    exports io.jccl.reduce to io.jccl.cli;
    exports io.jccl.reference to io.jccl.cli;
    exports io.jccl.security to io.jccl.cli;
    exports io.jccl.store to io.jccl.cli;
    exports io.jccl.transport.shm to io.jccl.cli;
}
