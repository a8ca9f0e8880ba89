package io.jccl.verify;

import io.jccl.DataType;
import io.jccl.buffer.Buf;

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
        b.writeTo(bytes);
        Files.write(path, bytes.array());
    }

    static Buf read(Path path, DataType dt, int count) throws IOException {
        byte[] raw = Files.readAllBytes(path);
        if (raw.length != (long) count * dt.sizeBytes()) {
            throw new IOException(path + " holds " + raw.length + " bytes, expected " + count + " x " + dt.sizeBytes());
        }
        Buf b = Buf.allocate(dt, count);
        b.readFrom(ByteBuffer.wrap(raw).order(ByteOrder.nativeOrder()));
        return b;
    }
}
