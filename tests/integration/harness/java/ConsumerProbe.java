import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A Java consumer in a group, timed for tests/integration/harness/test_consumer_connections.py:
 * built, left alone for a while (seed 003: no connection yet), then subscribed and polled
 * until it has read from every partition, committed, left alone again, closed. Prints
 * "constructed|polling|closing T" (epoch ms) and "seen P" lines. Run from source:
 *
 *   java -cp '.jars/java-generator-V/*' ConsumerProbe.java BOOTSTRAP TOPIC GROUP CLIENT_ID PARTITIONS WAIT_MS
 */
public final class ConsumerProbe {
    private ConsumerProbe() {
    }

    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("group.id", a[2]);
        p.put("client.id", a[3]);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        int partitions = Integer.parseInt(a[4]);
        long waitMs = Long.parseLong(a[5]);
        System.out.println("constructed " + System.currentTimeMillis());
        KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
            new ByteArrayDeserializer());
        Thread.sleep(waitMs);
        System.out.println("polling " + System.currentTimeMillis());
        c.subscribe(List.of(a[1]));
        Set<Integer> seen = new HashSet<>();
        long deadline = System.currentTimeMillis() + 60_000;
        while (seen.size() < partitions && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                seen.add(r.partition());
            }
        }
        System.out.println("seen " + seen);
        c.commitSync();
        long end = System.currentTimeMillis() + waitMs;
        while (System.currentTimeMillis() < end) {  // a consumer polls in a loop (seed 003)
            c.poll(Duration.ofMillis(200));
        }
        System.out.println("closing " + System.currentTimeMillis());
        c.close();
        System.out.flush();
    }
}
