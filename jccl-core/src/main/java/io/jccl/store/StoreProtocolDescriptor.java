package io.jccl.store;

/**
 * Byte layout of a {@link TcpStore} request and response, version 1, after the handshake of
 * {@link io.jccl.security.HandshakeDescriptor}. Big-endian.
 *
 * <pre>
 * request
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +---------------+---------------+-------------------------------+
 * |    opcode     |   reserved    |         key length            |  0
 * +---------------+---------------+-------------------------------+
 * |                         value length                          |  4
 * +---------------------------------------------------------------+
 * |          argument: timeout ms (GET) or delta (ADD)            |  8
 * |                                                               |
 * +---------------------------------------------------------------+
 * |            key (UTF-8), then value (SET)                      | 16
 *
 * response
 * +---------------+-----------------------------------------------+
 * |    status     |                  reserved                     |  0
 * +---------------+-----------------------------------------------+
 * |                         value length                          |  4
 * +---------------------------------------------------------------+
 * |              result: counter (ADD) or flag (CHECK, DELETE)    |  8
 * |                                                               |
 * +---------------------------------------------------------------+
 * |        value (GET), or a UTF-8 error message                  | 16
 * </pre>
 *
 * <p>Invariant: the server rejects a key longer than {@link #MAX_KEY_LENGTH} or a value longer than
 * {@link #MAX_VALUE_LENGTH} before reading it, and closes that connection.
 */
public final class StoreProtocolDescriptor {
    public static final int HEADER_LENGTH = 16;
    public static final int MAX_KEY_LENGTH = 4096;
    public static final int MAX_VALUE_LENGTH = 16 << 20;

    public static final byte OP_SET = 1;
    public static final byte OP_GET = 2;
    public static final byte OP_ADD = 3;
    public static final byte OP_CHECK = 4;
    public static final byte OP_DELETE = 5;

    public static final byte STATUS_OK = 0;
    public static final byte STATUS_TIMEOUT = 1;
    public static final byte STATUS_ERROR = 2;

    private StoreProtocolDescriptor() {
    }
}
