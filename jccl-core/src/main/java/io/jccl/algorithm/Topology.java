package io.jccl.algorithm;

/**
 * What decides whether an algorithm can run on a communicator, and part of what it costs there.
 *
 * @param world      the communicator's size
 * @param transport  the transport's short name ({@code local}, {@code shm}, {@code tcp}), for messages
 * @param subGroup   whether the communicator is a sub-group ({@code split}), for messages
 * @param arena      whether the transport offers a shared arena
 * @param arenaBytes the bytes of one exchange buffer of that arena; 0 without one
 */
public record Topology(int world, String transport, boolean subGroup, boolean arena, int arenaBytes) {
}
