package verifier.apps;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A consume-transform-produce loop on Kafka's own clients in a real consumer group, in one
 * of three commit strategies: the Java twin of producers/app_copier.py (the same batches,
 * processing time, partition mapping and state file).
 *
 * <ul>
 * <li>{@code before}: commit the polled batch's positions, then write it: at-most-once.
 * <li>{@code after}: write and flush, then commit: at-least-once.
 * <li>{@code transactional} (KIP-447): the batch and
 *     {@code sendOffsetsToTransaction(offsets, consumer.groupMetadata())} in one
 *     transaction: exactly-once at read_committed.
 * </ul>
 */
final class Copier {
    static final List<String> STRATEGIES = List.of("before", "after", "transactional");
    static final int POLL_MS = 200;
    static final int MAX_RECORDS = 200;
    /** how long the group waits for a silent (killed) member before moving its partitions */
    static final int SESSION_TIMEOUT_MS = 10_000;

    private final String strategy;
    private final Env env;
    private final StateFile state;
    private final long processMs;

    Copier(String strategy, Env env, long processMs) {
        this.strategy = strategy;
        this.env = env;
        this.processMs = processMs;
        this.state = new StateFile(env.stateFile, env.instance, strategy);
    }

    private Properties producerConfig() {
        Properties p = new Properties();
        p.put("bootstrap.servers", env.bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("client.id", env.group + "." + env.instance + ".producer");
        if (strategy.equals("transactional")) {
            p.put("transactional.id", env.transactionalIdPrefix + env.instance);
        }
        return p;
    }

    private Properties consumerConfig() {
        Properties p = new Properties();
        p.put("bootstrap.servers", env.bootstrap);
        p.put("group.id", env.group);
        p.put("client.id", env.group + "." + env.instance + ".consumer");
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("isolation.level", "read_committed");
        p.put("max.poll.records", String.valueOf(MAX_RECORDS));
        if (env.groupProtocol.equals("consumer")) {
            // KIP-848: the session timeout is the group's (set in copy(), as the group
            // config consumer.session.timeout.ms); the client refuses session.timeout.ms
            p.put("group.protocol", "consumer");
            return p;
        }
        if (!env.groupProtocol.isEmpty()) {
            p.put("group.protocol", env.groupProtocol);
        }
        // a killed instance's partitions move after 10 s, not Kafka's 45 s (the same as
        // producers/app_copier.py's SESSION_TIMEOUT_MS, docs/applications.md)
        p.put("session.timeout.ms", String.valueOf(SESSION_TIMEOUT_MS));
        return p;
    }

    /** Copy until {@code stop} is true, checked between batches (a poll lasts at most
     * POLL_MS), so a clean stop never leaves a batch half done. */
    void run(BooleanSupplier stop) throws InterruptedException {
        try {
            copy(stop);
        } catch (RuntimeException e) {
            state.error(e);  // a commit refused after a rebalance, a fenced producer
            throw e;
        }
    }

    private void copy(BooleanSupplier stop) throws InterruptedException {
        boolean transactional = strategy.equals("transactional");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(),
                 new ByteArraySerializer(), new ByteArraySerializer());
             KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig(),
                 new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            if (transactional) {
                producer.initTransactions();
            }
            if (env.groupProtocol.equals("consumer")) {
                // the same 10 s as the classic copier's, on the group (the broker's
                // group.consumer.min.session.timeout.ms must allow it: the tool's does)
                GroupConfigs.set(env, state, Map.of("consumer.session.timeout.ms",
                    String.valueOf(SESSION_TIMEOUT_MS)));
            }
            // nothing is open between two polls (each batch is written and committed before
            // the next), so a revoke has nothing to finish
            consumer.subscribe(env.inputs, new ConsumerRebalanceListener() {
                // the whole assignment after each callback: under the consumer protocol
                // (KIP-848, incremental) a callback names only what was added or taken
                // away, and the state file once showed 0 partitions owned by an instance
                // that held 3 (2026-11-29, [consumer] column)
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                    state.revoked(StateFile.names(consumer.assignment(), revoked));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                    state.rebalanced(StateFile.names(consumer.assignment(), List.of()));
                }
            });
            // started over after an error: the batch that was between its steps is gone
            // (aborted, or to be read again), nothing is at risk until the next one
            state.atRisk(0, false);
            int outPartitions = producer.partitionsFor(env.output).size();
            while (!stop.getAsBoolean()) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(POLL_MS));
                if (batch.isEmpty()) {
                    state.flush();  // the last batch's end, while no batch follows
                    continue;
                }
                // the positions, not the last record's offset + 1: at read_committed a
                // transaction's marker takes an offset past it
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (TopicPartition tp : batch.partitions()) {
                    offsets.put(tp, new OffsetAndMetadata(consumer.position(tp)));
                }
                int n = batch.count();
                switch (strategy) {
                    case "before" -> {
                        consumer.commitSync(offsets);
                        state.atRisk(n, false, opening("writing"));
                        process("writing");
                        write(producer, batch, outPartitions);
                        producer.flush();
                    }
                    case "after" -> {
                        write(producer, batch, outPartitions);
                        producer.flush();
                        state.atRisk(n, false, opening("committing"));
                        process("committing");
                        consumer.commitSync(offsets);
                    }
                    default -> {
                        producer.beginTransaction();
                        write(producer, batch, outPartitions);
                        // flushed: at risk means in the log, uncommitted
                        producer.flush();
                        state.atRisk(n, true, opening("committing"));
                        process("committing");
                        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                        producer.commitTransaction();
                    }
                }
                // on disk with the next batch's window (or an empty poll): one write a batch
                // without processing time, where three kept the commit-before copier at
                // 0.56 of its bare loop (StateFile.doneLater)
                state.doneLater();
            }
        } finally {
            state.flush();
        }
    }

    /** The step a batch's window opens in: {@code processing} (the sleep), or straight
     * the second step when there is no processing time (nothing for a trigger to hit
     * between the two steps, and one write of the state file instead of two). */
    private String opening(String second) {
        return processMs > 0 ? "processing" : second;
    }

    /** The processing time, then the second step said (if a processing step was). */
    private void process(String second) throws InterruptedException {
        Thread.sleep(processMs);
        if (processMs > 0) {
            state.step(second);
        }
    }

    /** Each record's key, value and headers to the output partition of its number. */
    private void write(KafkaProducer<byte[], byte[]> producer,
                       ConsumerRecords<byte[], byte[]> batch, int outPartitions) {
        for (ConsumerRecord<byte[], byte[]> r : batch) {
            producer.send(new ProducerRecord<>(env.output, r.partition() % outPartitions, null,
                r.key(), r.value(), r.headers()));
        }
    }
}
