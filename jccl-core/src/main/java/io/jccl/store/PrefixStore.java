package io.jccl.store;

import java.time.Duration;

/** Every key of {@code inner} under {@code prefix + "/"}: a namespace per job, sub-group or purpose. */
public final class PrefixStore implements Store {
    private final String prefix;
    private final Store inner;

    public PrefixStore(String prefix, Store inner) {
        this.prefix = prefix + "/";
        this.inner = inner;
    }

    @Override
    public void set(String key, byte[] value) {
        inner.set(prefix + key, value);
    }

    @Override
    public byte[] get(String key, Duration timeout) {
        return inner.get(prefix + key, timeout);
    }

    @Override
    public long add(String key, long delta) {
        return inner.add(prefix + key, delta);
    }

    @Override
    public boolean check(String key) {
        return inner.check(prefix + key);
    }

    @Override
    public boolean delete(String key) {
        return inner.delete(prefix + key);
    }

    /** Does not close the inner store, which others may share. */
    @Override
    public void close() {
        // the inner store belongs to whoever made it
    }
}
