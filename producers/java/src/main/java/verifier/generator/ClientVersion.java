package verifier.generator;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;

/**
 * The kafka-clients release on the classpath, read from the jar's own
 * {@code kafka/kafka-version.properties}. Not through {@code AppInfoParser}: it is
 * {@code org.apache.kafka.common.utils} up to 4.3 and {@code ...utils.internals} from 4.4,
 * and the generator builds against every release from 3.x on ({@code --clients java:V}).
 */
final class ClientVersion {
    private ClientVersion() {}

    private static final String VERSION = read();

    static String get() {
        return VERSION;
    }

    private static String read() {
        try (InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) {
                return "unknown";
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown").trim();
        } catch (IOException e) {
            return "unknown";
        }
    }
}
