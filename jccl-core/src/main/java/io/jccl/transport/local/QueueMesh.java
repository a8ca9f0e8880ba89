package io.jccl.transport.local;

import io.jccl.DataType;
import io.jccl.transport.Channel;
import io.jccl.transport.Frame;
import io.jccl.transport.FrameDescriptor;
import io.jccl.transport.FrameHeader;
import io.jccl.transport.Transport;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The in-process queue mesh: N ranks as threads of one JVM, one FIFO queue per directed edge and channel, each
 * with a single producer (the source rank) and a single consumer (the destination rank).
 *
 * <p>A send encodes the header with {@link FrameDescriptor} and copies the payload range into a fresh array, so
 * the sender may reuse its buffer at once; the receiver owns what it takes. An abort is the one exception to
 * single-producer use: it is put on every queue into the peer, so a peer waiting on any source sees it.
 */
public final class QueueMesh {
    private final int size;
    /** queues[channel][src][dst]. */
    private final BlockingQueue<Envelope>[][][] queues;

    @SuppressWarnings("unchecked")
    private QueueMesh(int size) {
        if (size < 1) {
            throw new IllegalArgumentException("world size must be at least 1: size=" + size);
        }
        this.size = size;
        Channel[] channels = Channel.values();
        queues = new BlockingQueue[channels.length][size][size];
        for (int c = 0; c < channels.length; c++) {
            for (int s = 0; s < size; s++) {
                for (int d = 0; d < size; d++) {
                    queues[c][s][d] = new LinkedBlockingQueue<>();
                }
            }
        }
    }

    public static QueueMesh create(int size) {
        return new QueueMesh(size);
    }

    public int size() {
        return size;
    }

    /** The transport of one rank. */
    public Transport endpoint(int rank) {
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank out of range: rank=" + rank + ", size=" + size);
        }
        return new Endpoint(rank);
    }

    private static final class Envelope {
        final byte[] header;
        final Object payload;

        Envelope(byte[] header, Object payload) {
            this.header = header;
            this.payload = payload;
        }
    }

    private final class Endpoint implements Transport {
        private final int rank;

        Endpoint(int rank) {
            this.rank = rank;
        }

        @Override
        public int rank() {
            return rank;
        }

        @Override
        public int size() {
            return size;
        }

        @Override
        public String name() {
            return "local";
        }

        @Override
        public void send(int dst, Channel channel, FrameHeader header, DataType dtype, Object payload, int offset) {
            int n = header.payloadCount();
            Object copy = dtype.newArray(n);
            if (n > 0) {
                System.arraycopy(payload, offset, copy, 0, n);
            }
            queues[channel.ordinal()][rank][dst].add(new Envelope(FrameDescriptor.encode(header), copy));
        }

        @Override
        public Frame receive(int src, Channel channel, long deadlineNanos) throws InterruptedException {
            BlockingQueue<Envelope> q = queues[channel.ordinal()][src][rank];
            Envelope e = q.poll();
            if (e == null) {
                long waitNanos = deadlineNanos - System.nanoTime();
                e = waitNanos > 0 ? q.poll(waitNanos, TimeUnit.NANOSECONDS) : null;
                if (e == null) {
                    return null;
                }
            }
            return new Frame(FrameDescriptor.decode(e.header), e.payload);
        }

        @Override
        public FrameHeader peekHeader(int src, Channel channel) {
            Envelope e = queues[channel.ordinal()][src][rank].peek();
            return e == null ? null : FrameDescriptor.decode(e.header);
        }

        @Override
        public void abortPeers(FrameHeader header, String reason) {
            byte[] bytes = reason.getBytes(StandardCharsets.UTF_8);
            Envelope e = new Envelope(FrameDescriptor.encode(header.withStep(header.step(), bytes.length)), bytes);
            for (int peer = 0; peer < size; peer++) {
                if (peer == rank) {
                    continue;
                }
                for (BlockingQueue<Envelope>[][] channel : queues) {
                    for (int src = 0; src < size; src++) {
                        channel[src][peer].add(e);
                    }
                }
            }
        }

        @Override
        public void close() {
            // queues belong to the mesh; nothing to release per rank
        }
    }
}
