package verifier.apps;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaClientSupplier;

/**
 * Kafka Streams' clients, made as Streams makes them, that tell the state file what the
 * stream thread does with them: no guess from outside. Streams has no public commit
 * listener, but every record it writes goes through its producer's {@code send} and every
 * commit through its main consumer's {@code commitSync} (at_least_once, after flushing the
 * producer) or its producer's {@code commitTransaction} (exactly_once_v2, the offsets
 * inside). So {@code at_risk} is the records handed to the producer since the last commit:
 * at_least_once, what a kill now makes Streams process and write again (those the producer
 * had sent); exactly_once_v2, the records of the open transaction (aborted by a kill).
 */
final class Counting implements KafkaClientSupplier {
    private final StateFile state;
    private final boolean transactional;

    Counting(StateFile state, boolean transactional) {
        this.state = state;
        this.transactional = transactional;
    }

    @Override
    public Admin getAdmin(Map<String, Object> config) {
        return Admin.create(config);
    }

    @Override
    public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
        return new CountingProducer(config);
    }

    @Override
    public Consumer<byte[], byte[]> getConsumer(Map<String, Object> config) {
        return new MainConsumer(config);
    }

    @Override
    public Consumer<byte[], byte[]> getRestoreConsumer(Map<String, Object> config) {
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    @Override
    public Consumer<byte[], byte[]> getGlobalConsumer(Map<String, Object> config) {
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private final class CountingProducer extends KafkaProducer<byte[], byte[]> {
        CountingProducer(Map<String, Object> config) {
            super(config, new ByteArraySerializer(), new ByteArraySerializer());
        }

        @Override
        public Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback cb) {
            Future<RecordMetadata> f = super.send(record, cb);
            state.oneMore(transactional);
            return f;
        }

        @Override
        public void commitTransaction() {
            super.commitTransaction();
            state.done();
        }

        @Override
        public void abortTransaction() {
            super.abortTransaction();
            state.aborted();
        }
    }

    private final class MainConsumer extends KafkaConsumer<byte[], byte[]> {
        MainConsumer(Map<String, Object> config) {
            super(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }

        @Override
        public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
            super.commitSync(offsets);
            if (!transactional) {
                state.done();
            }
        }

        @Override
        public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
            super.commitSync(offsets, timeout);
            if (!transactional) {
                state.done();
            }
        }

        @Override
        public void subscribe(Collection<String> topics, ConsumerRebalanceListener listener) {
            super.subscribe(topics, new Listening(listener, this));
        }

        @Override
        public void subscribe(Pattern pattern, ConsumerRebalanceListener listener) {
            super.subscribe(pattern, new Listening(listener, this));
        }
    }

    /**
     * Streams' own rebalance listener, and the state file told the main consumer's whole
     * assignment after each callback: Streams rebalances cooperatively, so a callback names
     * only the partitions added or taken away (an instance that kept 2 partitions and gained
     * 1 once said it owned 1).
     */
    private final class Listening implements ConsumerRebalanceListener {
        private final ConsumerRebalanceListener inner;
        private final Consumer<byte[], byte[]> consumer;

        Listening(ConsumerRebalanceListener inner, Consumer<byte[], byte[]> consumer) {
            this.inner = inner;
            this.consumer = consumer;
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
            inner.onPartitionsRevoked(revoked);
            state.revoked(StateFile.names(consumer.assignment(), revoked));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> lost) {
            inner.onPartitionsLost(lost);
            state.revoked(StateFile.names(consumer.assignment(), lost));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
            inner.onPartitionsAssigned(assigned);
            state.rebalanced(StateFile.names(consumer.assignment(), List.of()));
        }
    }
}
