package io.jccl.security;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;

import static io.jccl.security.HandshakeDescriptor.*;

/** Runs the handshake of {@link HandshakeDescriptor} over a connected stream pair. */
public final class Handshake {
    private Handshake() {
    }

    /** Thrown when a peer fails to authenticate or speaks another protocol. */
    public static final class RefusedException extends IOException {
        public RefusedException(String message) {
            super(message);
        }
    }

    /** What the server learned about an accepted client. */
    public static final class Client {
        public final int rank;
        public final int worldSize;

        Client(int rank, int worldSize) {
            this.rank = rank;
            this.worldSize = worldSize;
        }
    }

    private static byte[] intBytes(int v) {
        return ByteBuffer.allocate(4).putInt(v).array();
    }

    /** Client side: proves the secret and checks the server's proof; returns the server's rank. */
    public static int client(InputStream in, OutputStream out, JobSecret secret, byte purpose, int rank,
                             int worldSize) throws IOException {
        byte[] clientNonce = JobSecret.nonce();
        ByteBuffer hello = ByteBuffer.allocate(HELLO_LENGTH);
        hello.putInt(MAGIC_OFFSET, MAGIC).put(VERSION_OFFSET, VERSION).put(PURPOSE_OFFSET, purpose)
                .putInt(RANK_OFFSET, rank).putInt(WORLD_SIZE_OFFSET, worldSize).position(NONCE_OFFSET);
        hello.put(clientNonce);
        out.write(hello.array());
        out.flush();
        byte[] challenge = new byte[CHALLENGE_LENGTH];
        readFully(in, challenge, "challenge");
        ByteBuffer c = ByteBuffer.wrap(challenge);
        checkMagic(c.getInt(MAGIC_OFFSET), MAGIC, "challenge");
        if (c.get(VERSION_OFFSET) != VERSION) {
            throw new RefusedException("server speaks handshake version " + c.get(VERSION_OFFSET) + ", this client "
                    + VERSION + " (another jccl version?)");
        }
        if (c.get(STATUS_OFFSET) != STATUS_OK) {
            throw new RefusedException("server refused the connection: " + (c.get(PURPOSE_OFFSET) != purpose
                    ? "this port serves the " + purposeName(c.get(PURPOSE_OFFSET)) + ", the client connected to a "
                    + purposeName(purpose) : "status " + c.get(STATUS_OFFSET)));
        }
        int serverRank = c.getInt(RANK_OFFSET);
        byte[] serverNonce = new byte[NONCE_LENGTH];
        c.get(NONCE_OFFSET, serverNonce);
        byte[] serverProof = new byte[32];
        c.get(SERVER_PROOF_OFFSET, serverProof);
        byte[] p = {purpose};
        if (!JobSecret.matches(secret.proof("jccl-server", p, clientNonce, serverNonce, intBytes(rank),
                intBytes(serverRank)), serverProof)) {
            throw new RefusedException("the server failed to prove the job secret (wrong " + JobSecret.ENV + "?)");
        }
        out.write(secret.proof("jccl-client", p, clientNonce, serverNonce, intBytes(rank), intBytes(serverRank)));
        out.flush();
        byte[] accept = new byte[ACCEPT_LENGTH];
        readFully(in, accept, "accept");
        if (ByteBuffer.wrap(accept).getInt() == WRONG_WORLD_MAGIC) {
            byte[] world = new byte[4];
            readFully(in, world, "the server's world size");
            throw new RefusedException("rank " + serverRank + " is one of " + ByteBuffer.wrap(world).getInt()
                    + " ranks, this rank one of " + worldSize + " (the ranks were started with different world sizes)");
        }
        checkMagic(ByteBuffer.wrap(accept).getInt(), ACCEPT_MAGIC, "accept");
        return serverRank;
    }

    /** Server side: checks the client's proof; returns who it is. */
    public static Client server(InputStream in, OutputStream out, JobSecret secret, byte purpose, int serverRank)
            throws IOException {
        return server(in, out, secret, purpose, serverRank, -1);
    }

    /**
     * Server side of a rank of a world of {@code serverWorld} ranks: checks the client's proof and then its world
     * size, refusing a client of another size with {@link HandshakeDescriptor#WRONG_WORLD_MAGIC} and this size (so
     * that the client, proven to be of this job, names both); returns who it is. {@code serverWorld} -1: no world
     * to check.
     */
    public static Client server(InputStream in, OutputStream out, JobSecret secret, byte purpose, int serverRank,
                                int serverWorld) throws IOException {
        byte[] hello = new byte[HELLO_LENGTH];
        readFully(in, hello, "hello");
        ByteBuffer h = ByteBuffer.wrap(hello);
        checkMagic(h.getInt(MAGIC_OFFSET), MAGIC, "hello");
        if (h.get(VERSION_OFFSET) != VERSION || h.get(PURPOSE_OFFSET) != purpose) {
            refuse(out, purpose); // so that the client can say why, not just that the connection closed
            throw new RefusedException(h.get(VERSION_OFFSET) != VERSION ? "client speaks handshake version "
                    + h.get(VERSION_OFFSET) + ", this server " + VERSION : "client connected for the "
                    + purposeName(h.get(PURPOSE_OFFSET)) + ", this port serves the " + purposeName(purpose));
        }
        int clientRank = h.getInt(RANK_OFFSET);
        int worldSize = h.getInt(WORLD_SIZE_OFFSET);
        byte[] clientNonce = new byte[NONCE_LENGTH];
        h.get(NONCE_OFFSET, clientNonce);
        byte[] serverNonce = JobSecret.nonce();
        byte[] p = {purpose};
        ByteBuffer c = ByteBuffer.allocate(CHALLENGE_LENGTH);
        c.putInt(MAGIC_OFFSET, MAGIC).put(VERSION_OFFSET, VERSION).put(PURPOSE_OFFSET, purpose)
                .put(STATUS_OFFSET, STATUS_OK).putInt(RANK_OFFSET, serverRank);
        c.put(NONCE_OFFSET, serverNonce);
        c.put(SERVER_PROOF_OFFSET, secret.proof("jccl-server", p, clientNonce, serverNonce, intBytes(clientRank),
                intBytes(serverRank)));
        out.write(c.array());
        out.flush();
        byte[] proof = new byte[PROOF_LENGTH];
        try {
            readFully(in, proof, "proof");
        } catch (RefusedException e) { // a jccl client closes here when the server's proof does not verify
            throw new RefusedException("connection closed during the handshake (proof): "
                    + (clientRank >= 0 ? "the client claiming rank " + clientRank : "the client") + " closed it after "
                    + "this server's proof of the job secret, as a jccl client does when that proof does not verify "
                    + "(its " + JobSecret.ENV + " differs, or it has none)");
        }
        if (!JobSecret.matches(secret.proof("jccl-client", p, clientNonce, serverNonce, intBytes(clientRank),
                intBytes(serverRank)), proof)) {
            throw new RefusedException("client claiming rank " + clientRank + " failed to prove the job secret");
        }
        if (serverWorld >= 0 && worldSize != serverWorld) {
            send(out, ByteBuffer.allocate(8).putInt(WRONG_WORLD_MAGIC).putInt(serverWorld));
            throw new RefusedException("client of rank " + clientRank + " of " + worldSize + " ranks, this rank one of "
                    + serverWorld);
        }
        out.write(ByteBuffer.allocate(ACCEPT_LENGTH).putInt(ACCEPT_MAGIC).array());
        out.flush();
        return new Client(clientRank, worldSize);
    }

    /** A refusing CHALLENGE: this server's version and purpose, status refused, no nonce or proof. */
    private static void refuse(OutputStream out, byte purpose) {
        ByteBuffer c = ByteBuffer.allocate(CHALLENGE_LENGTH);
        c.putInt(MAGIC_OFFSET, MAGIC).put(VERSION_OFFSET, VERSION).put(PURPOSE_OFFSET, purpose)
                .put(STATUS_OFFSET, STATUS_REFUSED).putInt(RANK_OFFSET, -1);
        send(out, c);
    }

    /** Sends a refusing CHALLENGE, if the client is still there to read it. */
    private static void send(OutputStream out, ByteBuffer refusal) {
        try {
            out.write(refusal.array());
            out.flush();
        } catch (IOException ignored) {
            // the client is gone: nobody to tell
        }
    }

    private static void checkMagic(int actual, int expected, String what) throws RefusedException {
        if (actual != expected) {
            throw new RefusedException("bad " + what + " magic: expected=0x" + Integer.toHexString(expected)
                    + ", actual=0x" + Integer.toHexString(actual) + " (not a jccl peer)");
        }
    }

    private static void readFully(InputStream in, byte[] b, String what) throws IOException {
        try {
            new DataInputStream(in).readFully(b);
        } catch (java.io.EOFException e) {
            throw new RefusedException("connection closed during the handshake (" + what + ")");
        }
    }


    /** Why a handshake failed, for a log line: never "null" (an end of stream has no message). */
    public static String why(java.io.IOException e) {
        if (e instanceof java.io.EOFException) {
            return "it closed the connection before the handshake ended";
        }
        if (e instanceof java.net.SocketTimeoutException) {
            return "no handshake within the deadline (" + e.getMessage() + ")";
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }
}
