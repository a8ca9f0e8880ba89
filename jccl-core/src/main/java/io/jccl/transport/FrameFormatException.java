package io.jccl.transport;

/** A frame whose bytes do not follow {@link FrameDescriptor}: wrong magic, version or an impossible length. */
public final class FrameFormatException extends RuntimeException {
    public FrameFormatException(String message) {
        super(message);
    }
}
