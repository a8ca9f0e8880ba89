package io.jccl.train;

import io.jccl.Communicator;

/**
 * How the training loops refuse a step they cannot run once the peers may already wait in its collectives: the
 * communicator is aborted with the reason, so that every peer fails at once with it rather than at its deadline,
 * and this rank throws the same reason.
 */
final class Refusal {
    private Refusal() {
    }

    /**
     * Aborts {@code comm} with {@code what}, prefixed with this rank, and returns that reason for the exception this
     * rank throws. A communicator already closed or failed is left as it is: its peers learnt of that.
     */
    static String abort(Communicator comm, String what) {
        String reason = "rank " + comm.rank() + ": " + what;
        try {
            comm.abort(reason);
        } catch (RuntimeException e) {
            // already closed or failed: the peers learnt of that
        }
        return reason;
    }
}
