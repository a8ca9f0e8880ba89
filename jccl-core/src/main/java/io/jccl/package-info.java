/**
 * jccl's public API: collectives across ranks that are threads of one JVM, processes on one host or processes on
 * many hosts.
 *
 * <p>Start at {@link io.jccl.Jccl}: {@link io.jccl.Jccl#runThreads(int, io.jccl.Jccl.RankBody)} runs ranks as
 * threads, {@link io.jccl.Jccl#fromEnvironment()} joins a job that {@code jccl launch}, torchrun, mpirun or srun
 * started. Each rank gets a {@link io.jccl.Communicator}, whose collectives take {@link io.jccl.Tensor}s (ranges of
 * primitive arrays, or byte buffers) and a {@link io.jccl.ReduceOp}; {@link io.jccl.CollectiveOptions} choose the
 * algorithm and deadline of one call, {@link io.jccl.CommunicatorConfig} those of a communicator, and
 * {@link io.jccl.JcclSettings} reads every setting of the environment. Failures across ranks are
 * {@link io.jccl.JcclException}s.
 */
package io.jccl;
