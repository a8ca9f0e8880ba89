package io.jccl.spark;

import org.apache.spark.ExceptionFailure;
import org.apache.spark.TaskEndReason;
import org.apache.spark.TaskKilled;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

import java.util.ArrayList;
import java.util.List;

/** Records how every task ended: stage attempt, partition, reason, finish time. */
final class TaskEnds extends SparkListener {
    /** One ended task. */
    static final class End {
        final int stage;
        final int attempt;
        final int partition;
        final boolean successful;
        final String reason;
        final long launchMillis;
        final long finishMillis;

        End(int stage, int attempt, int partition, boolean successful, String reason, long launch, long finish) {
            this.stage = stage;
            this.attempt = attempt;
            this.partition = partition;
            this.successful = successful;
            this.reason = reason;
            this.launchMillis = launch;
            this.finishMillis = finish;
        }

        @Override
        public String toString() {
            return "stage " + stage + "." + attempt + " partition " + partition + " after "
                    + (finishMillis - launchMillis) + " ms: " + (successful ? "success" : reason);
        }
    }

    private final List<End> ends = new ArrayList<>();

    @Override
    public void onTaskEnd(SparkListenerTaskEnd e) {
        TaskEndReason r = e.reason();
        String reason;
        if (r instanceof ExceptionFailure) {
            ExceptionFailure f = (ExceptionFailure) r;
            reason = f.className() + ": " + f.description();
        } else if (r instanceof TaskKilled) {
            reason = "killed: " + ((TaskKilled) r).reason();
        } else {
            reason = r.toString();
        }
        synchronized (ends) {
            ends.add(new End(e.stageId(), e.stageAttemptId(), e.taskInfo().partitionId(), e.taskInfo().successful(),
                    reason, e.taskInfo().launchTime(), e.taskInfo().finishTime()));
        }
    }

    List<End> snapshot() {
        synchronized (ends) {
            return new ArrayList<>(ends);
        }
    }

    void clear() {
        synchronized (ends) {
            ends.clear();
        }
    }

    /**
     * Waits (listener events are delivered asynchronously) until {@code n} tasks of attempt 0 of the first stage
     * with a failed attempt-0 task have ended; returns those tasks.
     */
    List<End> awaitFailedAttempt(int n, long timeoutMillis) throws InterruptedException {
        long until = System.currentTimeMillis() + timeoutMillis;
        while (true) {
            List<End> all = snapshot();
            int stage = -1;
            for (End e : all) {
                if (e.attempt == 0 && !e.successful) {
                    stage = e.stage;
                    break;
                }
            }
            List<End> a0 = new ArrayList<>();
            for (End e : all) {
                if (e.attempt == 0 && e.stage == stage) {
                    a0.add(e);
                }
            }
            if (a0.size() >= n || System.currentTimeMillis() > until) {
                return a0;
            }
            Thread.sleep(50);
        }
    }
}
