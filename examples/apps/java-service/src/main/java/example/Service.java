package example;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * An example consumer service for {@code verifier chaos --app} (docs/applications.md): a
 * read-process-write loop on Kafka's own clients that knows nothing of the verifier but the
 * VERIFIER_* environment. Each polled batch is written to VERIFIER_OUTPUT_TOPIC (key, value
 * and headers unchanged: the value carries the identity the verifier judges by) and its
 * offsets are sent inside the same transaction with the group's metadata (KIP-447):
 * exactly-once at read_committed, which is what it claims with --app-guarantee. It stops
 * cleanly on SIGTERM; the verifier SIGKILLs and restarts its instances as the scenario says.
 *
 * <pre>
 *   mvn -q -f examples/apps/java-service/pom.xml package dependency:copy-dependencies
 *   verifier chaos --app "java -cp examples/apps/java-service/target/* example.Service" \
 *       --app-guarantee exactly-once --scenario instance-kill
 * </pre>
 */
public final class Service {
    private Service() {
    }

    public static void main(String[] args) throws InterruptedException {
        Map<String, String> env = System.getenv();
        Thread main = Thread.currentThread();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            main.interrupt();  // SIGTERM: end the current poll or send, close the clients
            try {
                stopped.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        try {
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    copy(env);
                } catch (InterruptException e) {
                    break;
                } catch (KafkaException e) {
                    // fenced, or the group moved our partitions mid-batch: new clients, the
                    // group's committed offsets; the new producer's initTransactions aborts
                    // what the old one left open
                    System.out.println("service: " + e + "; starting over");
                    Thread.sleep(1000);
                }
            }
        } finally {
            stopped.countDown();
        }
    }

    private static void copy(Map<String, String> env) {
        String bootstrap = env.get("VERIFIER_BOOTSTRAP_SERVERS");
        String output = env.get("VERIFIER_OUTPUT_TOPIC");
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", env.get("VERIFIER_GROUP_ID"));
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("isolation.level", "read_committed");
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        // stable per instance across restarts: a restarted instance fences its old self
        p.put("transactional.id", env.get("VERIFIER_TRANSACTIONAL_ID_PREFIX")
            + env.getOrDefault("VERIFIER_INSTANCE", "0"));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c,
                 new ByteArrayDeserializer(), new ByteArrayDeserializer());
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p,
                 new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.initTransactions();
            consumer.subscribe(List.of(env.get("VERIFIER_INPUT_TOPICS").split(",")));
            while (!Thread.currentThread().isInterrupted()) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(200));
                if (batch.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    producer.send(new ProducerRecord<>(output, null, r.key(), r.value(),
                        r.headers()));
                }
                for (TopicPartition tp : batch.partitions()) {
                    offsets.put(tp, new OffsetAndMetadata(consumer.position(tp)));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
            }
        }
    }
}
