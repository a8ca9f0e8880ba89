package io.jccl.transport;

/** Independent ordered streams between each pair of ranks. */
public enum Channel {
    /** Frames of collectives, in call order. */
    COLLECTIVE,
    /** Frames of point-to-point send and recv. */
    P2P
}
