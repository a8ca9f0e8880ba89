package io.jccl.store;

import java.time.Duration;

/**
 * A store that passes every call on to another, {@link #inner}: a subclass overrides what it watches or changes (a
 * rendezvous's set-up store looks for a published failure in its waits) and inherits the rest.
 */
public abstract class ForwardingStore implements Store {
    /** The store the calls go to. */
    protected final Store inner;

    protected ForwardingStore(Store inner) {
        this.inner = inner;
    }

    @Override
    public void set(String key, byte[] value) {
        inner.set(key, value);
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        return inner.get(key, timeout);
    }

    @Override
    public long add(String key, long delta) {
        return inner.add(key, delta);
    }

    @Override
    public boolean check(String key) {
        return inner.check(key);
    }

    @Override
    public boolean delete(String key) {
        return inner.delete(key);
    }

    /** Closes the inner store; a subclass that does not own it overrides this. */
    @Override
    public void close() {
        inner.close();
    }
}
