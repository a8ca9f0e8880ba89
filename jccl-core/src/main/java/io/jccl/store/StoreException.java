package io.jccl.store;

/** A store operation failed: timed out waiting for a key, could not reach the server, or was refused. */
public final class StoreException extends RuntimeException {
    public StoreException(String message) {
        super(message);
    }

    public StoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
