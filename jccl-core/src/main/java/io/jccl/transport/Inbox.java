package io.jccl.transport;

import java.util.ArrayDeque;
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
    private final Map<Integer, Lane[]> lanes = new ConcurrentHashMap<>();
    private final Map<Integer, Frame> aborts = new ConcurrentHashMap<>();
    private volatile Frame lost;
    private final Frame[] departed;

    /**
     * The frames of one (stream, source) not yet received, and the receives posted for them: never a queued data
     * frame and a waiting post at once (a frame that arrives goes to the oldest waiting post), so frames and posts
     * match in order. Changes to {@code posts} and {@code filling}, and queueing while posts wait, hold the lane.
     */
    private static final class Lane {
        final BlockingQueue<Frame> queue = new LinkedBlockingQueue<>();
        final ArrayDeque<PostedReceive> posts = new ArrayDeque<>();
        /** The post a reader is filling now, or null. */
        PostedReceive filling;

        /** The oldest post still waiting, dropping those cancelled meanwhile. */
        PostedReceive firstWaiting() {
            PostedReceive p;
            while ((p = posts.peek()) != null && !p.isWaiting()) {
                posts.poll();
            }
            return p;
        }

        /** Ends every post of this lane, the one being filled too, with {@code frame} (an abort). */
        void completeAll(Frame frame) {
            PostedReceive p;
            while ((p = posts.poll()) != null) {
                p.complete(frame);
            }
            if (filling != null) {
                filling.complete(frame);
            }
        }
    }

    public Inbox(int size) {
        this.size = size;
        this.departed = new Frame[size];
    }

    private Lane[] lanesOf(int stream) {
        Lane[] known = lanes.get(stream); // first: the lambda below captures this, and a wait polls in a loop
        if (known != null) {
            return known;
        }
        return lanes.computeIfAbsent(stream, s -> {
            Lane[] l = new Lane[size];
            for (int i = 0; i < size; i++) {
                l[i] = new Lane();
            }
            return l;
        });
    }

    /** How many streams this inbox keeps queues for (tests: that closed communicators' are dropped). */
    public int streams() {
        return lanes.size();
    }

    /** Drops the lanes and the abort of communicator {@code comm}, which has closed ({@code Transport.forget}). */
    public void forget(int comm) {
        lanes.keySet().removeIf(stream -> Streams.communicatorOf(stream) == comm);
        aborts.remove(comm);
    }

    /** Queues a frame from {@code src}, or hands it to the oldest receive posted for it; aborts go to every lane. */
    public void deliver(int src, Frame frame) {
        FrameHeader h = frame.header();
        if (h.isAbort()) {
            int comm = Streams.communicatorOf(h.stream());
            aborts.putIfAbsent(comm, frame);
            for (Map.Entry<Integer, Lane[]> e : lanes.entrySet()) {
                if (Streams.communicatorOf(e.getKey()) == comm) {
                    for (Lane lane : e.getValue()) {
                        abortLane(lane, frame);
                    }
                }
            }
            return;
        }
        Lane lane = lanesOf(h.stream())[src];
        synchronized (lane) {
            if (lane.queue.isEmpty()) {
                PostedReceive p;
                while ((p = lane.firstWaiting()) != null) {
                    lane.posts.poll();
                    if (p.complete(frame)) {
                        return;
                    } // cancelled meanwhile: the next one takes it
                }
            }
            lane.queue.add(frame);
        }
    }

    private static void abortLane(Lane lane, Frame frame) {
        synchronized (lane) {
            lane.completeAll(frame);
            lane.queue.add(frame);
        }
    }

    /** A peer is gone: {@code frame} (an abort naming it) is delivered to every communicator's streams. */
    public void peerLost(Frame frame) {
        if (lost == null) {
            lost = frame;
        }
        for (Lane[] ls : lanes.values()) {
            for (Lane lane : ls) {
                abortLane(lane, frame);
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
        for (Lane[] ls : lanes.values()) {
            abortLane(ls[src], frame);
        }
    }

    /**
     * Registers {@code posted} for the next frame from {@code src} on {@code stream} not yet taken: a frame already
     * queued (or a pending abort) ends it at once; otherwise it waits, after the receives posted before it, for a
     * reader to {@link #claim} it or for a whole frame to be {@link #deliver delivered}. Posting twice does nothing.
     */
    public void post(int src, int stream, PostedReceive posted) {
        if (!posted.markPosted()) {
            return;
        }
        Lane lane = lanesOf(stream)[src];
        synchronized (lane) {
            if (lane.firstWaiting() == null) {
                Frame f = lane.queue.poll();
                if (f == null) {
                    f = pendingAbort(src, stream);
                }
                if (f != null) {
                    posted.complete(f);
                    return;
                }
            }
            lane.posts.add(posted);
        }
    }

    /**
     * Called by a reader that has read the header {@code h} of a data frame from {@code src}: the posted receive it
     * may fill straight from its buffer (the oldest waiting one, when no frame is queued before and it accepts
     * {@code h}), now claimed; or null, and the frame is read whole and {@link #deliver delivered}. A claimed receive
     * is filled with {@link PostedReceive#place} and ended with {@link #filled}.
     */
    public PostedReceive claim(int src, FrameHeader h) {
        Lane lane = lanesOf(h.stream())[src];
        synchronized (lane) {
            if (!lane.queue.isEmpty()) {
                return null;
            }
            PostedReceive p = lane.firstWaiting();
            if (p == null || !p.accepts(h) || !p.claim()) {
                return null;
            }
            lane.posts.poll();
            lane.filling = p;
            return p;
        }
    }

    /** The reader has placed the whole payload of the frame {@code h} from {@code src} into {@code p}. */
    public void filled(int src, FrameHeader h, PostedReceive p) {
        Lane lane = lanesOf(h.stream())[src];
        synchronized (lane) {
            lane.filling = null;
        }
        p.finish(h);
    }

    /**
     * Waits for {@code posted} (posting it first if it is not yet): its frame, or a pending abort, or null once the
     * deadline passes; it stays posted then, so a later call waits on.
     */
    public Frame receive(int src, int stream, long deadlineNanos, PostedReceive posted) throws InterruptedException {
        post(src, stream, posted);
        return posted.await(deadlineNanos);
    }

    /** The next frame from {@code src} on {@code stream}, a pending abort, or null at the deadline. */
    public Frame receive(int src, int stream, long deadlineNanos) throws InterruptedException {
        Frame f = poll(src, stream);
        if (f != null) {
            return f;
        }
        long waitNanos = deadlineNanos - System.nanoTime();
        return waitNanos > 0 ? lanesOf(stream)[src].queue.poll(waitNanos, TimeUnit.NANOSECONDS) : null;
    }

    /**
     * The next frame from {@code src} on {@code stream}, a pending abort, or null; never waits. A frame queued
     * before the abort was recorded comes first: a peer may send its last frame and leave between this rank's look
     * at the queue and its look at the aborts, and that frame must not be lost behind the goodbye.
     */
    public Frame poll(int src, int stream) {
        BlockingQueue<Frame> queue = lanesOf(stream)[src].queue;
        Frame f = queue.poll();
        if (f != null) {
            return f;
        }
        Frame abort = pendingAbort(src, stream);
        if (abort == null) {
            return null;
        }
        f = queue.poll();
        return f != null ? f : abort;
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
        Frame f = lanesOf(stream)[src].queue.peek();
        return f == null ? null : f.header();
    }
}
