package verifier.apps;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A copier in a share group (KIP-932, {@code KafkaShareConsumer}, explicit acknowledgement):
 * write and flush the polled records, then acknowledge each (ACCEPT) and commit the
 * acknowledgements: at-least-once. A record acquired by an instance that dies is released
 * when the member's session ends (or its acquisition lock expires) and delivered again,
 * its delivery count one higher; at the group's delivery-count limit it is archived,
 * never delivered again: a deliberate drop, which the judge counts as {@code archived},
 * not lost. Which records this instance got at their last attempt goes to the state file
 * ({@code last_attempts}, "topic-partition@offset") before they are at risk.
 *
 * <p>Any member may get any record: the output is in no input order (reorders are
 * tolerated by at-least-once).
 */
final class ShareCopier {
    static final int POLL_MS = 200;
    static final int MAX_RECORDS = 200;
    /** the group's session (share.session.timeout.ms), as the copiers' 10 s; the broker's
     * group.share.min.session.timeout.ms must allow it (the tool's cluster does) */
    static final int SESSION_TIMEOUT_MS = 10_000;
    /** share.delivery.count.limit: the smallest the broker allows (default 5), so that
     * two kills can exhaust a record's attempts and the archived class is exercised */
    static final int DELIVERY_LIMIT = 2;
    static final int DEFAULT_DELIVERY_LIMIT = 5;

    private final Env env;
    private final StateFile state;
    private final long processMs;

    ShareCopier(Env env, long processMs) {
        this.env = env;
        this.processMs = processMs;
        this.state = new StateFile(env.stateFile, env.instance, "share");
    }

    private Properties producerConfig() {
        Properties p = new Properties();
        p.put("bootstrap.servers", env.bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("client.id", env.group + "." + env.instance + ".producer");
        return p;
    }

    private Properties consumerConfig() {
        Properties p = new Properties();
        p.put("bootstrap.servers", env.bootstrap);
        p.put("group.id", env.group);
        p.put("client.id", env.group + "." + env.instance + ".consumer");
        p.put("share.acknowledgement.mode", "explicit");
        p.put("max.poll.records", String.valueOf(MAX_RECORDS));
        return p;
    }

    /** The group's configs before the first poll: from the input's start (the default is
     * latest), committed input only (the default is read_uncommitted), the session and
     * the limit above. Returns the delivery-count limit in force. */
    private int configureGroup() {
        Map<String, String> needed = Map.of("share.auto.offset.reset", "earliest",
            "share.isolation.level", "read_committed");
        Map<String, String> all = new java.util.HashMap<>(needed);
        all.put("share.session.timeout.ms", String.valueOf(SESSION_TIMEOUT_MS));
        all.put("share.delivery.count.limit", String.valueOf(DELIVERY_LIMIT));
        if (GroupConfigs.set(env, state, all)) {
            return DELIVERY_LIMIT;
        }
        GroupConfigs.set(env, state, needed);
        return DEFAULT_DELIVERY_LIMIT;
    }

    void run(BooleanSupplier stop) throws InterruptedException {
        try {
            copy(stop);
        } catch (RuntimeException e) {
            state.error(e);
            throw e;
        }
    }

    private void copy(BooleanSupplier stop) throws InterruptedException {
        int limit = configureGroup();
        state.deliveryLimit(limit);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(),
                 new ByteArraySerializer(), new ByteArraySerializer());
             KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(
                 consumerConfig(), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(env.inputs);
            state.atRisk(0, false);
            int outPartitions = producer.partitionsFor(env.output).size();
            while (!stop.getAsBoolean()) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(POLL_MS));
                if (batch.isEmpty()) {
                    state.flush();  // the last batch's end, while no batch follows
                    continue;
                }
                List<String> last = new ArrayList<>();
                TreeSet<String> from = new TreeSet<>();
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    from.add(r.topic() + "-" + r.partition());
                    Optional<Short> count = r.deliveryCount();
                    if (count.isPresent() && count.get() >= limit) {
                        last.add(r.topic() + "-" + r.partition() + "@" + r.offset());
                    }
                }
                // a share group assigns no partitions of its own: the ones this batch came from
                state.assigned(from);
                if (!last.isEmpty()) {
                    state.lastAttempts(last);
                }
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    producer.send(new ProducerRecord<>(env.output, r.partition() % outPartitions,
                        null, r.key(), r.value(), r.headers()));
                }
                producer.flush();
                state.atRisk(batch.count(), false);
                Thread.sleep(processMs);
                state.step("committing");
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                Map<TopicIdPartition, Optional<KafkaException>> acks = consumer.commitSync();
                for (Optional<KafkaException> failed : acks.values()) {
                    // e.g. the acquisition lock expired: the records go to another delivery
                    failed.ifPresent(state::error);
                }
                // said with the next batch's window or the next empty poll: two replacements
                // of the file a batch, not four (as the copiers')
                state.doneLater();
            }
        }
    }
}
