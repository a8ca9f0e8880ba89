package io.jccl.verify;

import io.jccl.DataType;
import io.jccl.core.Buf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

/** Raw native-order element files, the format the gloo reference script reads and writes. */
final class BufIO {
    private BufIO() {
    }

    static void write(Buf b, Path path) throws IOException {
        ByteBuffer bytes = ByteBuffer.allocate((int) b.byteSize()).order(ByteOrder.nativeOrder());
        int o = b.offset();
        int n = b.count();
        switch (b.dtype()) {
            case FLOAT32: bytes.asFloatBuffer().put((float[]) b.array(), o, n); break;
            case FLOAT64: bytes.asDoubleBuffer().put((double[]) b.array(), o, n); break;
            case FLOAT16:
            case BFLOAT16: bytes.asShortBuffer().put((short[]) b.array(), o, n); break;
            case INT8:
            case UINT8: bytes.put((byte[]) b.array(), o, n); break;
            case INT32: bytes.asIntBuffer().put((int[]) b.array(), o, n); break;
            case INT64: bytes.asLongBuffer().put((long[]) b.array(), o, n); break;
            default: throw new AssertionError(b.dtype());
        }
        Files.write(path, bytes.array());
    }

    static Buf read(Path path, DataType dt, int count) throws IOException {
        byte[] raw = Files.readAllBytes(path);
        if (raw.length != (long) count * dt.sizeBytes()) {
            throw new IOException(path + " holds " + raw.length + " bytes, expected " + count + " x " + dt.sizeBytes());
        }
        ByteBuffer bytes = ByteBuffer.wrap(raw).order(ByteOrder.nativeOrder());
        Buf b = Buf.allocate(dt, count);
        switch (dt) {
            case FLOAT32: bytes.asFloatBuffer().get((float[]) b.array()); break;
            case FLOAT64: bytes.asDoubleBuffer().get((double[]) b.array()); break;
            case FLOAT16:
            case BFLOAT16: bytes.asShortBuffer().get((short[]) b.array()); break;
            case INT8:
            case UINT8: bytes.get((byte[]) b.array()); break;
            case INT32: bytes.asIntBuffer().get((int[]) b.array()); break;
            case INT64: bytes.asLongBuffer().get((long[]) b.array()); break;
            default: throw new AssertionError(dt);
        }
        return b;
    }
}
