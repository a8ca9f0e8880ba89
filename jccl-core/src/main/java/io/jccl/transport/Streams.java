package io.jccl.transport;

/**
 * Stream ids: independent ordered streams between each pair of ranks, one pair of streams per communicator.
 * {@code stream = communicatorId << 1 | kind}, kind 0 for collectives and 1 for point-to-point; the world
 * communicator has id 0, sub-communicators from {@code split} get ids derived from their parent's.
 */
public final class Streams {
    private Streams() {
    }

    public static int collective(int communicatorId) {
        return communicatorId << 1;
    }

    public static int pointToPoint(int communicatorId) {
        return communicatorId << 1 | 1;
    }

    public static int communicatorOf(int stream) {
        return stream >>> 1;
    }

    public static boolean isCollective(int stream) {
        return (stream & 1) == 0;
    }
}
