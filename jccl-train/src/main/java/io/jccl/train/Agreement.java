package io.jccl.train;

import io.jccl.Communicator;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * How the training loops check their construction across ranks, as torch's DDP verifies its parameters' shapes
 * across processes: every rank gives what it refuses in its own arguments (or nothing) and the facts that must be
 * the same everywhere (the model's shape, the bucket size, a hash of the initial parameters), one
 * {@link Communicator#allGatherV} exchanges them, and every rank throws the same {@link IllegalArgumentException}
 * if any rank refused or any rank's facts differ from rank 0's. Without it, a rank whose arguments were bad threw
 * alone while its peers waited in the first step until their deadline, and ranks whose models differed in shape
 * but not in size summed one parameter's gradient into another's without an error. The communicator stays usable:
 * the exchange completed on every rank.
 */
final class Agreement {
    private Agreement() {
    }

    /**
     * Exchanges this rank's {@code problem} (null: none) and {@code facts} (one per line, such as
     * {@code "bucketBytes=1024"}) and throws on every rank, naming {@code what}, each rank that refused and why, or
     * each rank whose facts differ from rank 0's and its first differing fact.
     */
    static void check(Communicator comm, String what, String problem, List<String> facts) {
        String mine = (problem == null ? "" : problem.replace('\n', ' ')) + "\n" + String.join("\n", facts);
        byte[][] all = comm.allGatherV(mine.getBytes(StandardCharsets.UTF_8));
        List<String> refusals = new ArrayList<>();
        List<String> differences = new ArrayList<>();
        List<String> reference = null;
        for (int r = 0; r < all.length; r++) {
            String[] parts = new String(all[r], StandardCharsets.UTF_8).split("\n", -1);
            if (!parts[0].isEmpty()) {
                refusals.add("rank " + r + ": " + parts[0]);
            }
            List<String> theirs = List.of(parts).subList(1, parts.length);
            if (reference == null) {
                reference = theirs;
                continue;
            }
            for (int i = 0; i < Math.max(theirs.size(), reference.size()); i++) {
                String a = i < theirs.size() ? theirs.get(i) : "nothing more";
                String b = i < reference.size() ? reference.get(i) : "nothing more";
                if (!a.equals(b)) {
                    differences.add("rank " + r + " has " + a + " where rank 0 has " + b);
                    break;
                }
            }
        }
        if (!refusals.isEmpty()) {
            throw new IllegalArgumentException("rank " + comm.rank() + ": " + what + " refused by "
                    + (refusals.size() == 1 ? "a rank" : refusals.size() + " ranks") + " (checked on every rank "
                    + "before any step): " + String.join("; ", refusals));
        }
        if (!differences.isEmpty()) {
            throw new IllegalArgumentException("rank " + comm.rank() + ": " + what + " differs across ranks (checked "
                    + "on every rank before any step): " + String.join("; ", differences));
        }
    }

    /** The facts of {@code model}'s shape: its layer count and each layer's sizes. */
    static List<String> shape(Mlp model) {
        List<String> facts = new ArrayList<>();
        facts.add("layers=" + model.layers());
        for (int l = 0; l < model.layers(); l++) {
            facts.add("layer " + l + "=" + model.in(l) + "x" + model.out(l));
        }
        return facts;
    }

    /** A fact naming a hash of {@code values} ({@code name} and its length too), which must be the same everywhere. */
    static String hash(String name, float[] values) {
        return name + ": " + values.length + " values of hash " + Integer.toHexString(java.util.Arrays.hashCode(values));
    }
}
