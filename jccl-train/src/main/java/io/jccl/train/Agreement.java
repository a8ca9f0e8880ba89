package io.jccl.train;

import io.jccl.Communicator;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * How the training loops check their construction across ranks, as torch's DDP verifies its parameters' shapes
 * across processes. Every rank gives what it refuses in its own arguments (or nothing) and the facts that must be
 * the same everywhere (the model's shape, the bucket layout, a hash of the initial parameters). A first
 * {@link Communicator#allGatherV} exchanges the refusals and a digest of the facts; only when a digest differs from
 * rank 0's does a second one bring rank 0's facts and those of the ranks that differ, to name what differed. Every
 * rank then throws the same {@link IllegalArgumentException} if any rank refused or differs. Without it, a rank whose
 * arguments were bad threw alone while its peers waited in the first step until their deadline, and ranks whose
 * models differed in shape but not in size summed one parameter's gradient into another's without an error. The
 * communicator stays usable: the exchanges completed on every rank.
 */
final class Agreement {
    /** The most ranks a message names one by one. */
    static final int NAMED = 8;

    private Agreement() {
    }

    /**
     * Exchanges this rank's {@code problem} (null: none; then {@code facts} are not read) and {@code facts} (such as
     * {@code "bucketBytes=1024"}, in an order every rank shares) and throws on every rank, naming {@code what}, each
     * rank that refused and why, or each rank whose facts differ from rank 0's and its first differing fact. Returns
     * only where no rank refused and every rank's facts are rank 0's; always throws where {@code problem} is given.
     */
    static void check(Communicator comm, String what, String problem, List<String> facts) {
        List<String> mine = problem == null ? facts : List.of();
        String digest = digest(mine);
        byte[][] first = comm.allGatherV(((problem == null ? "" : problem.replace('\n', ' ')) + "\n" + digest)
                .getBytes(StandardCharsets.UTF_8));
        List<String> refusals = new ArrayList<>();
        boolean differ = false;
        String reference = null;
        boolean[] differs = new boolean[first.length];
        for (int r = 0; r < first.length; r++) {
            String[] parts = new String(first[r], StandardCharsets.UTF_8).split("\n", 2);
            if (!parts[0].isEmpty()) {
                refusals.add("rank " + r + ": " + parts[0]);
            }
            if (r == 0) {
                reference = parts[1];
            }
            differs[r] = !parts[1].equals(reference);
            differ |= differs[r];
        }
        if (!refusals.isEmpty()) {
            throw new IllegalArgumentException("rank " + comm.rank() + ": " + what + " refused by "
                    + (refusals.size() == 1 ? "a rank" : refusals.size() + " ranks") + " (checked on every rank "
                    + "before any step): " + named(refusals));
        }
        if (!differ) {
            return;
        }
        boolean send = comm.rank() == 0 || differs[comm.rank()];
        byte[][] all = comm.allGatherV(send ? String.join("\n", mine).getBytes(StandardCharsets.UTF_8)
                : new byte[0]);
        List<String> ours = lines(all[0]);
        List<String> differences = new ArrayList<>();
        for (int r = 1; r < all.length; r++) {
            if (!differs[r]) {
                continue;
            }
            List<String> theirs = lines(all[r]);
            for (int i = 0; i < Math.max(theirs.size(), ours.size()); i++) {
                String a = i < theirs.size() ? theirs.get(i) : "nothing more";
                String b = i < ours.size() ? ours.get(i) : "nothing more";
                if (!a.equals(b)) {
                    differences.add("rank " + r + " has " + a + " where rank 0 has " + b);
                    break;
                }
            }
        }
        throw new IllegalArgumentException("rank " + comm.rank() + ": " + what + " differs across ranks (checked on "
                + "every rank before any step): " + named(differences));
    }

    /** The first {@link #NAMED} of {@code items}, and how many more. */
    private static String named(List<String> items) {
        return String.join("; ", items.subList(0, Math.min(NAMED, items.size())))
                + (items.size() > NAMED ? "; and " + (items.size() - NAMED) + " more" : "");
    }

    private static List<String> lines(byte[] bytes) {
        return bytes.length == 0 ? List.of() : Arrays.asList(new String(bytes, StandardCharsets.UTF_8).split("\n", -1));
    }

    /** A SHA-256 digest of {@code facts}, in hex. */
    private static String digest(List<String> facts) {
        try {
            java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
            for (String f : facts) {
                md.update(f.getBytes(StandardCharsets.UTF_8));
                md.update((byte) '\n');
            }
            return java.util.HexFormat.of().formatHex(md.digest());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
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
    static String hash(String name, float[] values, int from, int to) {
        int h = 1;
        for (int i = from; i < to; i++) {
            h = 31 * h + Float.floatToIntBits(values[i]);
        }
        return name + ": " + (to - from) + " values of hash " + Integer.toHexString(h);
    }
}
