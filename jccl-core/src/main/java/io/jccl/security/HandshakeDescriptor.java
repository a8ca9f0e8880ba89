package io.jccl.security;

/**
 * Byte layout of the connection handshake shared by the TCP store and the TCP transport, version 1.
 * Big-endian (network order). Every message has a fixed length, so nothing is allocated from a length a peer
 * claims.
 *
 * <pre>
 * HELLO, client to server (32 bytes)
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +---------------------------------------------------------------+
 * |                    magic 0x4A434853 "JCHS"                    |  0
 * +---------------+---------------+-------------------------------+
 * |    version    |    purpose    |           reserved            |  4
 * +---------------+---------------+-------------------------------+
 * |                 client rank (-1: a store client)              |  8
 * +---------------------------------------------------------------+
 * |                          world size                           | 12
 * +---------------------------------------------------------------+
 * |                   client nonce (16 bytes)                     | 16
 * +---------------------------------------------------------------+
 *
 * CHALLENGE, server to client (64 bytes)
 * +---------------------------------------------------------------+
 * |                    magic 0x4A434853 "JCHS"                    |  0
 * +---------------+---------------+---------------+---------------+
 * |    version    |    purpose    |    status     |   reserved    |  4
 * +---------------+---------------+---------------+---------------+
 * |                          server rank                          |  8
 * +---------------------------------------------------------------+
 * |                           reserved                            | 12
 * +---------------------------------------------------------------+
 * |                   server nonce (16 bytes)                     | 16
 * +---------------------------------------------------------------+
 * |   server proof: HMAC-SHA256(secret, "jccl-server", purpose,   | 32
 * |     client nonce, server nonce, client rank, server rank)     |
 * |                          (32 bytes)                           |
 * +---------------------------------------------------------------+
 *
 * PROOF, client to server (32 bytes): HMAC-SHA256(secret, "jccl-client", purpose, client nonce, server nonce,
 * client rank, server rank)
 *
 * ACCEPT, server to client (4 bytes): 0x4A434F4B "JCOK"; or, to a client whose world size differs from the
 * server's, WRONG WORLD (8 bytes): 0x4A435753 "JCWS", then the server's world size
 * </pre>
 *
 * <p>A server that will not take a hello of another version or purpose answers with a CHALLENGE whose status is
 * {@link #STATUS_REFUSED}, carrying its own version and purpose and no nonce or proof, and closes the connection;
 * the client names both sides' versions or purposes ({@link #purposeName}). A rank of the transport answers a
 * client of another world size, once both have proven the secret, with WRONG WORLD instead of ACCEPT, so that the
 * client names both sizes (an older client reports a bad accept magic).
 *
 * <p>Invariant: each side proves knowledge of the job secret over both fresh nonces before the other sends
 * anything else; a proof that does not match closes the connection, and a replayed proof never matches.
 */
public final class HandshakeDescriptor {
    public static final int MAGIC = 0x4A434853;
    public static final int ACCEPT_MAGIC = 0x4A434F4B;
    /** Instead of {@link #ACCEPT_MAGIC}: the client's world size is not the server's, which follows (4 bytes). */
    public static final int WRONG_WORLD_MAGIC = 0x4A435753;
    public static final byte VERSION = 1;
    public static final byte PURPOSE_STORE = 0;
    public static final byte PURPOSE_TRANSPORT = 1;

    /** {@code store}, {@code transport}, or the number. */
    public static String purposeName(byte purpose) {
        return purpose == PURPOSE_STORE ? "store" : purpose == PURPOSE_TRANSPORT ? "transport" : "purpose " + purpose;
    }
    public static final byte STATUS_OK = 0;
    public static final byte STATUS_REFUSED = 1;

    public static final int HELLO_LENGTH = 32;
    public static final int CHALLENGE_LENGTH = 64;
    public static final int PROOF_LENGTH = 32;
    public static final int ACCEPT_LENGTH = 4;
    public static final int NONCE_LENGTH = 16;

    public static final int MAGIC_OFFSET = 0;
    public static final int VERSION_OFFSET = 4;
    public static final int PURPOSE_OFFSET = 5;
    public static final int STATUS_OFFSET = 6;
    public static final int RANK_OFFSET = 8;
    public static final int WORLD_SIZE_OFFSET = 12;
    public static final int NONCE_OFFSET = 16;
    public static final int SERVER_PROOF_OFFSET = 32;

    private HandshakeDescriptor() {
    }
}
