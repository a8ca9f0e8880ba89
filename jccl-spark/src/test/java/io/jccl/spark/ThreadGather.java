package io.jccl.spark;

import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** BarrierTaskContext.allGather for ranks that are threads: every round waits for all, then all read all. */
final class ThreadGather {
    private final String[] slots;
    private final CyclicBarrier written;
    private final CyclicBarrier read;
    /** Rounds run, counted by rank 0. */
    private volatile int rounds;

    ThreadGather(int world) {
        slots = new String[world];
        written = new CyclicBarrier(world);
        read = new CyclicBarrier(world);
    }

    AllGather rank(int r) {
        return message -> {
            try {
                slots[r] = message;
                written.await(60, TimeUnit.SECONDS);
                String[] all = slots.clone();
                if (r == 0) {
                    rounds++;
                }
                read.await(60, TimeUnit.SECONDS);
                return all;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            } catch (BrokenBarrierException | TimeoutException e) {
                throw new IllegalStateException("allGather of rank " + r + ": " + e, e);
            }
        };
    }

    int rounds() {
        return rounds;
    }
}
