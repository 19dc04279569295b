package verifier.apps;

import java.util.Arrays;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A stateful Kafka Streams topology, as users write one: the input records grouped by a
 * key made from each record, counted in a state store ({@code counts}, logged to its
 * changelog topic), each count change written to the output topic (key = the group's key,
 * value = its count as text). Re-keying goes through a repartition topic ({@code bucket}),
 * so the count runs in a second sub-topology, with its own commits.
 *
 * <p>The key is one of {@link #BUCKETS} buckets of the record's key bytes (its value when
 * it has no key): a function of the record alone, so the same input log gives the same
 * counts in any run (the reference oracle compares the final count per key with a
 * fault-free run's, verifier/judge/app_reference.py).
 */
final class CountPerKey {
    static final int BUCKETS = 64;

    private CountPerKey() {
    }

    static String bucket(byte[] key, byte[] value) {
        return bucket(key, value, BUCKETS);
    }

    static String bucket(byte[] key, byte[] value, int buckets) {
        byte[] of = key != null ? key : value;
        int b = Math.floorMod(Arrays.hashCode(of == null ? new byte[0] : of), buckets);
        return String.format("k%02d", b);
    }

    static Topology topology(Env env) {
        return topology(env, BUCKETS);
    }

    /** As above with {@code buckets} keys ({@link StreamsTuning}'s {@code --buckets}). */
    static Topology topology(Env env, int buckets) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(env.inputs, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
            .groupBy((k, v) -> bucket(k, v, buckets), Grouped.with("bucket", Serdes.String(),
                Serdes.ByteArray()))
            .count(Materialized.as("counts"))
            .toStream()
            .mapValues(n -> String.valueOf(n))
            .to(env.output, Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }
}
