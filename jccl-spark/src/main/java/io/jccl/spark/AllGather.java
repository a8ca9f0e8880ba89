package io.jccl.spark;

/**
 * One collective exchange of strings among the tasks of a barrier stage: every task calls it with its message and
 * gets every task's message in partition order ({@code BarrierTaskContext.allGather}). An interface so that the
 * rendezvous can be tested with ranks that are threads.
 */
@FunctionalInterface
public interface AllGather {
    String[] allGather(String message);
}
