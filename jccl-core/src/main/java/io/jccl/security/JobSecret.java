package io.jccl.security;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * The per-job secret every peer proves it knows (HMAC-SHA256 challenge and response) before a store or a
 * transport accepts its connection. The launcher generates one and hands it to its ranks in {@link #ENV}.
 * An empty secret authenticates nothing; {@link #isEmpty()} lets callers warn.
 */
public final class JobSecret {
    /** Environment variable holding the secret, as hex. */
    public static final String ENV = "JCCL_SECRET";
    private static final SecureRandom RANDOM = new SecureRandom();

    private final byte[] key;

    private JobSecret(byte[] key) {
        this.key = key;
    }

    /** 32 random bytes. */
    public static JobSecret generate() {
        byte[] k = new byte[32];
        RANDOM.nextBytes(k);
        return new JobSecret(k);
    }

    /** The secret in {@code JCCL_SECRET}, or an empty one. */
    public static JobSecret fromEnvironment() {
        return from(io.jccl.JcclSettings.fromEnvironment());
    }

    /** The secret of {@code settings} ({@code JCCL_SECRET}), or an empty one. */
    public static JobSecret from(io.jccl.JcclSettings settings) {
        String hex = settings.secretHex();
        return hex == null || hex.isEmpty() ? none() : fromHex(hex);
    }

    public static JobSecret fromHex(String hex) {
        try {
            return new JobSecret(HexFormat.of().parseHex(hex));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(ENV + " must be hexadecimal", e);
        }
    }

    public static JobSecret none() {
        return new JobSecret(new byte[0]);
    }

    public boolean isEmpty() {
        return key.length == 0;
    }

    /** The secret as hex, for the environment of child processes. */
    public String toHex() {
        return HexFormat.of().formatHex(key);
    }

    public static byte[] nonce() {
        byte[] n = new byte[16];
        RANDOM.nextBytes(n);
        return n;
    }

    /** HMAC-SHA256 over a role label and the parts, each length-prefixed. */
    public byte[] proof(String role, byte[]... parts) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key.length == 0 ? new byte[1] : key, "HmacSHA256"));
            byte[] r = role.getBytes(StandardCharsets.UTF_8);
            mac.update((byte) r.length);
            mac.update(r);
            for (byte[] p : parts) {
                mac.update((byte) (p.length >>> 8));
                mac.update((byte) p.length);
                mac.update(p);
            }
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 unavailable", e);
        }
    }

    /** Constant-time comparison. */
    public static boolean matches(byte[] expected, byte[] actual) {
        return MessageDigest.isEqual(expected, actual);
    }

    @Override
    public String toString() {
        return isEmpty() ? "JobSecret[none]" : "JobSecret[set]";
    }
}
