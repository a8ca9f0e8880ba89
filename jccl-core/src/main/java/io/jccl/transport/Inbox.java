package io.jccl.transport;

import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One rank's received frames, queued per (stream, source) in arrival order: what every transport hands frames
 * to, and what {@link Transport#receive} and {@link Transport#peekHeader} read.
 *
 * <p>An abort for a communicator is remembered and put on every queue of that communicator's streams, so a rank
 * waiting on any source sees it, including on queues created later. A lost peer aborts every communicator.
 */
public final class Inbox {
    private final int size;
    private final Map<Integer, BlockingQueue<Frame>[]> queues = new ConcurrentHashMap<>();
    private final Map<Integer, Frame> aborts = new ConcurrentHashMap<>();
    private volatile Frame lost;
    private final Frame[] departed;

    public Inbox(int size) {
        this.size = size;
        this.departed = new Frame[size];
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private BlockingQueue<Frame>[] queuesOf(int stream) {
        return queues.computeIfAbsent(stream, s -> {
            BlockingQueue<Frame>[] q = new BlockingQueue[size];
            for (int i = 0; i < size; i++) {
                q[i] = new LinkedBlockingQueue<>();
            }
            return q;
        });
    }

    /** Queues a frame from {@code src}; abort frames go to every queue of their communicator. */
    public void deliver(int src, Frame frame) {
        FrameHeader h = frame.header();
        if (h.isAbort()) {
            int comm = Streams.communicatorOf(h.stream());
            aborts.putIfAbsent(comm, frame);
            for (Map.Entry<Integer, BlockingQueue<Frame>[]> e : queues.entrySet()) {
                if (Streams.communicatorOf(e.getKey()) == comm) {
                    for (BlockingQueue<Frame> q : e.getValue()) {
                        q.add(frame);
                    }
                }
            }
            return;
        }
        queuesOf(h.stream())[src].add(frame);
    }

    /** A peer is gone: {@code frame} (an abort naming it) is delivered to every communicator's streams. */
    public void peerLost(Frame frame) {
        if (lost == null) {
            lost = frame;
        }
        for (BlockingQueue<Frame>[] qs : queues.values()) {
            for (BlockingQueue<Frame> q : qs) {
                q.add(frame);
            }
        }
    }

    /**
     * {@code src} closed its end cleanly: frames it sent before still arrive in order; after them, a receive from
     * {@code src} returns {@code frame} (an abort saying so) instead of waiting.
     */
    public void peerClosed(int src, Frame frame) {
        synchronized (departed) {
            departed[src] = frame;
        }
        for (BlockingQueue<Frame>[] qs : queues.values()) {
            qs[src].add(frame);
        }
    }

    /** The next frame from {@code src} on {@code stream}, a pending abort, or null at the deadline. */
    public Frame receive(int src, int stream, long deadlineNanos) throws InterruptedException {
        Frame f = poll(src, stream);
        if (f != null) {
            return f;
        }
        long waitNanos = deadlineNanos - System.nanoTime();
        return waitNanos > 0 ? queuesOf(stream)[src].poll(waitNanos, TimeUnit.NANOSECONDS) : null;
    }

    /** The next frame from {@code src} on {@code stream}, a pending abort, or null; never waits. */
    public Frame poll(int src, int stream) {
        Frame f = queuesOf(stream)[src].poll();
        if (f != null) {
            return f;
        }
        Frame abort = pendingAbort(stream);
        if (abort == null) {
            synchronized (departed) {
                abort = departed[src];
            }
        }
        return abort;
    }

    private Frame pendingAbort(int stream) {
        Frame a = aborts.get(Streams.communicatorOf(stream));
        return a != null ? a : lost;
    }

    /**
     * The abort that a receive from {@code src} on {@code stream} would return once its queue is empty (an abort
     * of the stream's communicator, a lost peer, or {@code src} having left), or null; consumes nothing.
     */
    public Frame pendingAbort(int src, int stream) {
        Frame abort = pendingAbort(stream);
        if (abort == null) {
            synchronized (departed) {
                abort = departed[src];
            }
        }
        return abort;
    }

    public FrameHeader peekHeader(int src, int stream) {
        Frame f = queuesOf(stream)[src].peek();
        return f == null ? null : f.header();
    }
}
