/**
 * What a rank sent and received: {@link io.jccl.instrument.TrafficCounters} (from
 * {@link io.jccl.Communicator#counters()}) per operation and {@link io.jccl.instrument.Counter}, and the JSONL
 * bandwidth trace ({@link io.jccl.instrument.TraceWriter}, switched on by {@code JCCL_TRACE}).
 */
package io.jccl.instrument;
