import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * Whether several sockets per pair carry more than one over loopback on this machine (issue 11, item 3):
 * {@code PAIRS} senders at once (4 is a 4-rank ring step, where every rank sends) each send {@code MIB} MiB to
 * their receiver, split evenly over {@code STREAMS} connections, each with a thread on either side, from and into
 * direct memory, {@code ROUNDS} times; prints the median GB/s of all pairs together. All in one JVM (threads):
 * the same copies and wake-ups on the two cores as ranks in processes. Used in docs/performance.md:
 *
 * <pre>
 * java scripts/StreamsProbe.java MIB STREAMS ROUNDS PAIRS     # e.g. 64 1 7 4, then 64 2 7 4
 * </pre>
 */
public final class StreamsProbe {
    private StreamsProbe() {
    }

    public static void main(String[] args) throws Exception {
        long bytes = Long.parseLong(args[0]) << 20;
        int streams = Integer.parseInt(args[1]);
        int rounds = Integer.parseInt(args[2]);
        int pairs = args.length > 3 ? Integer.parseInt(args[3]) : 1;
        streams *= pairs; // every pair its own connections; the bytes below are per pair
        bytes *= pairs;
        ServerSocketChannel server = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
        List<SocketChannel> out = new ArrayList<>();
        List<SocketChannel> in = new ArrayList<>();
        for (int i = 0; i < streams; i++) {
            out.add(SocketChannel.open(server.getLocalAddress()));
            in.add(server.accept());
        }
        long share = bytes / streams;
        double[] gbps = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < streams; i++) {
                SocketChannel o = out.get(i);
                SocketChannel c = in.get(i);
                threads.add(new Thread(() -> pump(o, share, true)));
                threads.add(new Thread(() -> pump(c, share, false)));
            }
            long t0 = System.nanoTime();
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join();
            }
            gbps[r] = (double) share * streams / (System.nanoTime() - t0);
        }
        java.util.Arrays.sort(gbps);
        System.out.printf("%d pair(s), %d MiB each over %d stream(s): median %.2f GB/s (min %.2f, max %.2f)%n", pairs,
                (bytes / pairs) >> 20, streams / pairs, gbps[rounds / 2], gbps[0], gbps[rounds - 1]);
    }

    private static void pump(SocketChannel ch, long bytes, boolean send) {
        ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
        try {
            for (long left = bytes; left > 0; ) {
                buf.clear().limit((int) Math.min(buf.capacity(), left));
                left -= send ? ch.write(buf) : ch.read(buf);
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
