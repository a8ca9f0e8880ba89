package io.jccl.spark;

import io.jccl.Communicator;

import java.io.Serializable;
import java.util.Iterator;

/**
 * What every task of a barrier stage run by {@link JcclSpark#run} does with its partition and the stage's
 * communicator; its result is sent back to the driver (so it must be serializable).
 */
@FunctionalInterface
public interface BarrierFunction<T, R extends Serializable> extends Serializable {
    R apply(Iterator<T> partition, Communicator comm) throws Exception;
}
