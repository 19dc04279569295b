// The Java client's own bare consume-produce loop for benchmarks/app_bench.py: the Java
// copier preset's loop (producers/java-apps, verifier.apps.Copier: the same client settings,
// batches of up to 200 records, each record to the output partition of its number, the
// same commit strategies) without what the tool adds: no state file, no rebalance
// listener, no start-over on an error, no stop flag.
//
// Run as a single-file source program (Java 11+) on the java-apps classpath, with the
// preset's environment (VERIFIER_BOOTSTRAP_SERVERS, VERIFIER_INPUT_TOPICS,
// VERIFIER_OUTPUT_TOPIC, VERIFIER_GROUP_ID, VERIFIER_TRANSACTIONAL_ID_PREFIX):
//   java -cp CP benchmarks/BareCopier.java before|after|transactional PROCESS_MS
// Copies until killed.

import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class BareCopier {
    public static void main(String[] args) throws Exception {
        String strategy = args[0];
        long processMs = Long.parseLong(args[1]);
        Map<String, String> env = System.getenv();
        String output = env.get("VERIFIER_OUTPUT_TOPIC");
        Properties p = new Properties();
        p.put("bootstrap.servers", env.get("VERIFIER_BOOTSTRAP_SERVERS"));
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        if (strategy.equals("transactional")) {
            p.put("transactional.id", env.get("VERIFIER_TRANSACTIONAL_ID_PREFIX") + "bare");
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", env.get("VERIFIER_BOOTSTRAP_SERVERS"));
        c.put("group.id", env.get("VERIFIER_GROUP_ID"));
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("isolation.level", "read_committed");
        c.put("max.poll.records", "200");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p,
                 new ByteArraySerializer(), new ByteArraySerializer());
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c,
                 new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            if (strategy.equals("transactional")) {
                producer.initTransactions();
            }
            consumer.subscribe(Arrays.asList(env.get("VERIFIER_INPUT_TOPICS").split(",")));
            int outPartitions = producer.partitionsFor(output).size();
            while (true) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(200));
                if (batch.isEmpty()) {
                    continue;
                }
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (TopicPartition tp : batch.partitions()) {
                    offsets.put(tp, new OffsetAndMetadata(consumer.position(tp)));
                }
                if (strategy.equals("transactional")) {
                    producer.beginTransaction();
                }
                if (strategy.equals("before")) {
                    consumer.commitSync(offsets);
                }
                Thread.sleep(processMs);
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    producer.send(new ProducerRecord<>(output, r.partition() % outPartitions,
                        null, r.key(), r.value(), r.headers()));
                }
                producer.flush();
                if (strategy.equals("after")) {
                    consumer.commitSync(offsets);
                } else if (strategy.equals("transactional")) {
                    producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                    producer.commitTransaction();
                }
            }
        }
    }
}
