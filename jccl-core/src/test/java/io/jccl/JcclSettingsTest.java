package io.jccl;

import io.jccl.pipeline.AlgorithmSelector;
import io.jccl.pipeline.CostModel;
import io.jccl.pipeline.DefaultCommunicator;
import io.jccl.rendezvous.Rendezvous;
import io.jccl.security.JobSecret;
import io.jccl.transport.WaitStrategy;
import io.jccl.transport.shm.ShmTransport;
import io.jccl.transport.tcp.TcpOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link JcclSettings}: the defaults of before, the precedence of before, and errors that name the setting. */
class JcclSettingsTest {
    private static final Map<String, String> HOME = Map.of("user.home", "/home/u", "java.io.tmpdir", "/tmp");

    private static JcclSettings env(String... nameValue) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < nameValue.length; i += 2) {
            m.put(nameValue[i], nameValue[i + 1]);
        }
        return JcclSettings.from(m, HOME);
    }

    @Test
    void shouldKeepTheDefaultsAndNamesOfTheClassesThatUsedToReadThem() {
        JcclSettings s = JcclSettings.from(Map.of(), HOME);
        assertEquals(Duration.ofMinutes(30), s.timeout());
        assertEquals(CommunicatorConfig.TIMEOUT_DEFAULT, s.timeout());
        assertNull(s.tracePrefix());
        assertTrue(s.algorithms().isEmpty());
        assertEquals(TcpOptions.CONNECT_TIMEOUT_DEFAULT, s.connectTimeout());
        assertEquals(TcpOptions.MAX_MESSAGE_DEFAULT, s.maxMessageBytes());
        assertEquals("127.0.0.1", s.bindAddress("127.0.0.1"));
        assertEquals("127.0.0.1", s.bindAddress("localhost"));
        assertEquals("0.0.0.0", s.bindAddress("10.1.2.3"));
        assertNull(s.advertiseAddress());
        assertNull(s.secretHex());
        assertFalse(s.externalStore());
        assertEquals(Files.isDirectory(Path.of("/dev/shm")) ? Path.of("/dev/shm") : Path.of("/tmp"), s.shmDirectory());
        assertEquals(ShmTransport.RING_DEFAULT, s.shmRingBytes());
        assertEquals(ShmTransport.ARENA_DEFAULT, s.shmArenaBytes());
        assertEquals(ShmTransport.REGISTERED_DEFAULT, s.shmRegisteredBytes());
        assertEquals(4 << 20, s.localArenaBytes());
        assertEquals(WaitStrategy.OVERSUBSCRIBED_SPINS_DEFAULT, s.oversubscribedSpins());
        assertEquals(Path.of("/home/u", ".jccl", "tune.properties"), s.tuneFile());
        assertEquals("/usr/bin/python3", s.torchPython());
        // the variable names the lower layers still publish are the ones read here
        assertEquals(List.of(ShmTransport.DIR_ENV, ShmTransport.RING_ENV, ShmTransport.ARENA_ENV,
                        ShmTransport.REGISTERED_ENV, TcpOptions.BIND_ENV, TcpOptions.ADVERTISE_ENV,
                        TcpOptions.CONNECT_TIMEOUT_ENV, TcpOptions.MAX_MESSAGE_ENV, JobSecret.ENV,
                        WaitStrategy.OVERSUBSCRIBED_SPINS_ENV, CostModel.FILE_ENV, Rendezvous.STORE_ENV),
                List.of(JcclSettings.SHM_DIR_ENV, JcclSettings.SHM_RING_ENV, JcclSettings.SHM_ARENA_ENV,
                        JcclSettings.SHM_REGISTERED_ENV, JcclSettings.BIND_ENV, JcclSettings.ADVERTISE_ENV,
                        JcclSettings.CONNECT_TIMEOUT_ENV, JcclSettings.MAX_MESSAGE_ENV, JcclSettings.SECRET_ENV,
                        JcclSettings.OVERSUBSCRIBED_SPINS_ENV, JcclSettings.TUNE_FILE_ENV, JcclSettings.STORE_ENV));
    }

    @Test
    void shouldReadEveryVariable() {
        JcclSettings s = env("JCCL_TIMEOUT_MS", "1500", "JCCL_TRACE", "/tmp/t", "JCCL_ALGO_ALL_REDUCE", "tree",
                "JCCL_ALGO_BROADCAST", "shm", "JCCL_CONNECT_TIMEOUT_MS", " 3000 ", "JCCL_BIND_ADDR", "10.0.0.5",
                "JCCL_ADVERTISE_ADDR", "node7", "JCCL_MAX_MESSAGE_BYTES", "1048576", "JCCL_SECRET", "00ff",
                "JCCL_STORE", "External", "JCCL_SHM_DIR", "/var/jccl", "JCCL_SHM_RING_BYTES", "65536",
                "JCCL_SHM_ARENA_BYTES", "8192", "JCCL_SHM_REGISTERED_BYTES", "0", "JCCL_LOCAL_ARENA_BYTES", "4104",
                "JCCL_OVERSUBSCRIBED_SPINS", "13", "JCCL_TUNE_FILE", "/etc/jccl.tune", "JCCL_TORCH_PYTHON", "/opt/py");
        assertEquals(Duration.ofMillis(1500), s.timeout());
        assertEquals("/tmp/t", s.tracePrefix());
        assertEquals(Map.of(OpType.ALL_REDUCE, Algorithm.TREE, OpType.BROADCAST, Algorithm.SHARED_MEMORY),
                s.algorithms());
        assertEquals(Duration.ofSeconds(3), s.connectTimeout());
        assertEquals("10.0.0.5", s.bindAddress("127.0.0.1"));
        assertEquals("node7", s.advertiseAddress());
        assertEquals(1 << 20, s.maxMessageBytes());
        assertEquals("00ff", s.secretHex());
        assertEquals("00ff", JobSecret.from(s).toHex());
        assertTrue(s.externalStore());
        assertEquals(Path.of("/var/jccl"), s.shmDirectory());
        assertEquals(65536, s.shmRingBytes());
        assertEquals(8192, s.shmArenaBytes());
        assertEquals(0, s.shmRegisteredBytes());
        assertEquals(4104, s.localArenaBytes());
        assertEquals(13, s.oversubscribedSpins());
        assertEquals(Path.of("/etc/jccl.tune"), s.tuneFile());
        assertEquals("/opt/py", s.torchPython());

        CommunicatorConfig c = s.communicatorConfig();
        assertSame(s, c.settings());
        assertEquals(Duration.ofMillis(1500), c.timeout());
        assertEquals("/tmp/t", c.tracePrefix());
        assertEquals(Algorithm.TREE, c.algorithm(OpType.ALL_REDUCE));
        assertSame(s, c.withTimeout(Duration.ofSeconds(1)).withTrace(null).withAlgorithm(Algorithm.RING).settings());

        TcpOptions tcp = TcpOptions.from(s, "127.0.0.1");
        assertEquals("10.0.0.5", tcp.bindHost());
        assertEquals("node7", tcp.advertiseHost());
        assertEquals(Duration.ofSeconds(3), tcp.connectTimeout());
        assertEquals(1 << 20, tcp.maxMessageBytes());
        assertEquals("00ff", tcp.secret().toHex());
    }

    @Test
    void shouldTakeTheOtherSpellingOfAnOperationAndTreatBlankAsUnset() {
        assertEquals(Map.of(OpType.ALL_REDUCE, Algorithm.RING), env("JCCL_ALGO_ALLREDUCE", "ring").algorithms());
        // the underscored name wins, as before, even when blank
        assertTrue(env("JCCL_ALGO_ALL_REDUCE", " ", "JCCL_ALGO_ALLREDUCE", "ring").algorithms().isEmpty());
        JcclSettings blank = env("JCCL_TIMEOUT_MS", " ", "JCCL_SHM_RING_BYTES", "", "JCCL_TRACE", "",
                "JCCL_STORE", " ", "JCCL_TUNE_FILE", " ");
        assertEquals(JcclSettings.TIMEOUT_DEFAULT, blank.timeout());
        assertEquals(JcclSettings.SHM_RING_DEFAULT, blank.shmRingBytes());
        assertNull(blank.tracePrefix());
        assertFalse(blank.externalStore());
        assertEquals(Path.of("/home/u", ".jccl", "tune.properties"), blank.tuneFile());
        // a set but blank secret is an empty one (no authentication), as before; unset is null
        assertEquals("", env("JCCL_SECRET", " ").secretHex());
        assertTrue(JobSecret.from(env("JCCL_SECRET", " ")).isEmpty());
        assertTrue(JobSecret.from(env()).isEmpty());
    }

    @Test
    void shouldLetTheSystemPropertyWinOverTheVariable() {
        Map<String, String> e = Map.of("JCCL_TIMEOUT_MS", "1000", "JCCL_TRACE", "/env");
        Map<String, String> p = new HashMap<>(HOME);
        assertEquals(Duration.ofMillis(1000), JcclSettings.from(e, p).timeout());
        assertEquals("/env", JcclSettings.from(e, p).tracePrefix());
        p.put("jccl.timeout.ms", "2000");
        p.put("jccl.trace", "/prop");
        assertEquals(Duration.ofMillis(2000), JcclSettings.from(e, p).timeout());
        assertEquals("/prop", JcclSettings.from(e, p).tracePrefix());
        // as System.getProperty(name, System.getenv(...)) did: a property set to "" wins, and means the default
        p.put("jccl.timeout.ms", "");
        p.put("jccl.trace", "");
        assertEquals(JcclSettings.TIMEOUT_DEFAULT, JcclSettings.from(e, p).timeout());
        assertNull(JcclSettings.from(e, p).tracePrefix());
        p.put("jccl.timeout.ms", "soon");
        IllegalArgumentException x = assertThrows(IllegalArgumentException.class, () -> JcclSettings.from(e, p));
        assertTrue(x.getMessage().contains("jccl.timeout.ms") && x.getMessage().contains("'soon'"), x.getMessage());
    }

    @Test
    void shouldNameTheVariableAndTheValueOfEveryBadSetting() {
        String[][] bad = {
            {"JCCL_TIMEOUT_MS", "30s"}, {"JCCL_TIMEOUT_MS", "0"}, {"JCCL_CONNECT_TIMEOUT_MS", "-5"},
            {"JCCL_CONNECT_TIMEOUT_MS", "1m"}, {"JCCL_MAX_MESSAGE_BYTES", "0"}, {"JCCL_MAX_MESSAGE_BYTES", "big"},
            {"JCCL_STORE", "internal"}, {"JCCL_SHM_RING_BYTES", "100000"}, {"JCCL_SHM_RING_BYTES", "2048"},
            {"JCCL_SHM_RING_BYTES", "4294967296"}, {"JCCL_SHM_ARENA_BYTES", "5000"}, {"JCCL_SHM_ARENA_BYTES", "0"},
            {"JCCL_SHM_REGISTERED_BYTES", "-4096"}, {"JCCL_SHM_REGISTERED_BYTES", "1x"},
            {"JCCL_LOCAL_ARENA_BYTES", "4100"}, {"JCCL_LOCAL_ARENA_BYTES", "1024"},
            {"JCCL_OVERSUBSCRIBED_SPINS", "-1"}, {"JCCL_OVERSUBSCRIBED_SPINS", "many"},
            {"JCCL_ALGO_ALL_REDUCE", "fastest"}, {"JCCL_ALGO_BROADCAST", "ring"}, {"JCCL_ALGO_ALLGATHER", "tree!"},
            {"JCCL_TUNE_FILE", "a\u0000b"}, {"JCCL_SHM_DIR", "d\u0000e"},
        };
        for (String[] b : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> env(b[0], b[1]),
                    b[0] + "=" + b[1]);
            assertTrue(e.getMessage().contains(b[0]) && e.getMessage().contains(b[1]),
                    b[0] + "=" + b[1] + ": " + e.getMessage());
        }
    }

    @Test
    void shouldNeverShowTheSecret() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> env("JCCL_SECRET", "s3cr3t"));
        assertTrue(e.getMessage().contains("JCCL_SECRET"), e.getMessage());
        assertFalse(e.getMessage().contains("s3cr3t"), e.getMessage());
        assertNull(e.getCause(), "the cause would quote a character of the secret");
        String shown = env("JCCL_SECRET", "abcdef0123").toString();
        assertFalse(shown.contains("abcdef0123"), shown);
        assertTrue(shown.contains("secret=set"), shown);
    }

    @Test
    void shouldPassTheSettingsDownToTheCommunicatorsTransportsAndCostModel(@TempDir Path dir) throws Exception {
        Path tune = dir.resolve("tune.properties");
        CostModel.defaults().with("local", "link", 900, 0.5).with("local", "arena", 1, 0.000001).store(tune, "test");
        JcclSettings s = env("JCCL_TUNE_FILE", tune.toString(), "JCCL_LOCAL_ARENA_BYTES", "8192",
                "JCCL_TIMEOUT_MS", "45000");
        AlgorithmSelector expected = new AlgorithmSelector(CostModel.load(tune), "local", 8192, 3);
        AlgorithmSelector defaults = new AlgorithmSelector(CostModel.defaults(), "local", 4 << 20, 3);
        List<double[]> predicted = Jccl.runThreads(3, s.communicatorConfig(), comm -> {
            AlgorithmSelector sel = ((DefaultCommunicator) comm).selector();
            return new double[] {sel.predictMicros(OpType.ALL_REDUCE, Algorithm.RING, 1 << 20),
                sel.predictMicros(OpType.ALL_REDUCE, Algorithm.SHARED_MEMORY, 1 << 20)};
        });
        for (double[] p : predicted) {
            assertEquals(expected.predictMicros(OpType.ALL_REDUCE, Algorithm.RING, 1 << 20), p[0], 1e-9);
            assertEquals(expected.predictMicros(OpType.ALL_REDUCE, Algorithm.SHARED_MEMORY, 1 << 20), p[1], 1e-9);
            assertNotEquals(defaults.predictMicros(OpType.ALL_REDUCE, Algorithm.RING, 1 << 20), p[0]);
            assertNotEquals(defaults.predictMicros(OpType.ALL_REDUCE, Algorithm.SHARED_MEMORY, 1 << 20), p[1]);
        }
    }
}
