package io.jccl.diag;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.EventType;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * A JDK Flight Recorder event for every collective and point-to-point call ({@code io.jccl.Call}), so that JDK
 * Mission Control shows communication beside GC, CPU and locks: the op, the bytes, the algorithm, the duration,
 * the communicator, the rank, the sequence number and the peer last waited for. Off unless a recording enables it
 * (it is in no default profile); a call checks {@link #isOn} first, which costs a field read when it is off.
 * Record with {@code -XX:StartFlightRecording:settings=profile,+io.jccl.Call#enabled=true} (JDK 17+) or a
 * {@code jdk.jfr.Recording} that enables {@code io.jccl.Call}.
 */
@Name("io.jccl.Call")
@Label("jccl call")
@Category({"jccl"})
@Description("A collective or point-to-point call of a jccl communicator")
@Enabled(false)
@StackTrace(false)
public final class CallEvent extends Event {
    private static final EventType TYPE = EventType.getEventType(CallEvent.class);

    @Label("Operation")
    public String operation;

    @Label("Algorithm")
    public String algorithm;

    @Label("Bytes")
    @DataAmount
    public long bytes;

    @Label("Communicator")
    public int communicator;

    @Label("Rank")
    public int rank;

    @Label("Sequence number")
    public long sequence;

    @Label("Peer last waited for")
    @Description("The rank (of the call's communicator) the call last waited for, -1 if none")
    public int peer;

    @Label("Failed")
    public boolean failed;

    /** Whether a recording has the event on. */
    public static boolean isOn() {
        return TYPE.isEnabled();
    }
}
