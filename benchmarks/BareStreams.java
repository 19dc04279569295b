// A bare Kafka Streams pass-through for benchmarks/app_bench.py: the Streams preset's
// topology and settings (producers/java-apps, verifier.apps.PassThrough: stream(input
// topics).to(output topic) with byte-array serdes, one stream thread, the input at
// read_committed) on Streams' own clients, without what the tool adds: no counting
// KafkaClientSupplier, no state file, no rebalance listener.
//
// Run as a single-file source program (Java 11+) on the java-apps classpath, with the
// preset's environment (VERIFIER_BOOTSTRAP_SERVERS, VERIFIER_INPUT_TOPICS,
// VERIFIER_OUTPUT_TOPIC, VERIFIER_GROUP_ID):
//   java -cp CP benchmarks/BareStreams.java at_least_once|exactly_once_v2
// Runs until killed.

import java.nio.file.Files;
import java.util.Arrays;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

public class BareStreams {
    public static void main(String[] args) throws Exception {
        Map<String, String> env = System.getenv();
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(Arrays.asList(env.get("VERIFIER_INPUT_TOPICS").split(",")),
                Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
            .to(env.get("VERIFIER_OUTPUT_TOPIC"), Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
        Properties p = new Properties();
        p.put("application.id", env.get("VERIFIER_GROUP_ID"));
        p.put("bootstrap.servers", env.get("VERIFIER_BOOTSTRAP_SERVERS"));
        p.put("processing.guarantee", args[0]);
        p.put("state.dir", Files.createTempDirectory("bare-streams-").toString());
        p.put("num.stream.threads", "1");
        p.put("consumer.isolation.level", "read_committed");
        p.put("consumer.auto.offset.reset", "earliest");
        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.start();
        Thread.currentThread().join();
    }
}
