package verifier.generator;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.types.Password;

/**
 * {@code --validate-config FILE}: the Java producer's own validation of a properties file,
 * without a broker (verifier advise, docs/advise.md). The file is parsed by
 * {@code java.util.Properties}, the cluster address and the serializers are replaced (as a
 * run replaces them), {@code ProducerConfig} computes the effective values (its
 * post-processing silently turns idempotence off where the user left it to its default
 * and another setting conflicts) and {@code new KafkaProducer} runs the constructor's own
 * checks (delivery.timeout.ms against linger.ms + request.timeout.ms, the transactional
 * id against idempotence). Nothing is connected: the producer is closed at once.
 *
 * <p>Prints one JSON object: {@code client}, {@code version}, {@code ok}, and either
 * {@code effective} (every producer setting, secrets hidden) or {@code error} (the
 * exception's class and message, as the client raises it). Exit 0 accepted, 64 refused.
 */
final class Validate {
    private Validate() {}

    /** An address nothing listens on: the constructor resolves it, nobody connects. */
    static final String NOWHERE = "127.0.0.1:1";
    static final String BYTES = "org.apache.kafka.common.serialization.ByteArraySerializer";

    static int run(Path file) {
        Properties props = new Properties();
        try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            props.load(in);
        } catch (IOException e) {
            throw new Main.UsageError("cannot read " + file + ": " + e.getMessage());
        }
        props.remove(Settings.RECORD_SIZE); // the generator's own knob, not the producer's
        props.put("bootstrap.servers", NOWHERE);
        props.put("key.serializer", BYTES);
        props.put("value.serializer", BYTES);
        Map<String, Object> out = new TreeMap<>();
        out.put("client", "java");
        out.put("version", ClientVersion.get());
        try {
            ProducerConfig config = new ProducerConfig(props);
            Map<String, Object> effective = new TreeMap<>();
            for (Map.Entry<String, ?> e : config.values().entrySet()) {
                Object v = e.getValue();
                effective.put(e.getKey(), v instanceof Password ? "***" : v == null ? null : String.valueOf(v));
            }
            new KafkaProducer<byte[], byte[]>(props).close(Duration.ZERO);
            out.put("ok", true);
            out.put("effective", effective);
        } catch (RuntimeException e) {
            Throwable root = e;
            while (root.getCause() != null && root.getCause() != root) root = root.getCause();
            out.put("ok", false);
            out.put("error", root.getClass().getName() + ": " + root.getMessage());
        }
        System.out.println(Json.write(out));
        return Boolean.TRUE.equals(out.get("ok")) ? Main.EXIT_OK : Main.EXIT_USAGE;
    }
}
