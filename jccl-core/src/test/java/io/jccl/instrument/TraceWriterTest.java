package io.jccl.instrument;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The trace's JSON: fields in order, strings escaped, null as null, JSON fragments as they are. */
class TraceWriterTest {

    @Test
    void shouldWriteFieldsInOrderAndEscapeStrings() {
        String json = TraceWriter.record()
                .field("rank", 3)
                .field("seq", -1L)
                .field("op", "allReduce")
                .field("reduceOp", (String) null)
                .fields("\"peersSent\":[1,2],\"peersReceived\":[]")
                .field("status", "rank 1: \"x\"\\y\nz\t\u0001")
                .toString();
        assertEquals("{\"rank\":3,\"seq\":-1,\"op\":\"allReduce\",\"reduceOp\":null,\"peersSent\":[1,2],"
                + "\"peersReceived\":[],\"status\":\"rank 1: \\\"x\\\"\\\\y\\nz\\t\\u0001\"}", json);
    }

    @Test
    void shouldWriteAnEmptyObject() {
        assertEquals("{}", TraceWriter.record().toString());
        assertEquals("{\"a\":[]}", TraceWriter.record().fields("\"a\":[]").toString());
        assertEquals("\"a\\\"b\"", TraceWriter.quote("a\"b"));
    }
}
