package verifier.apps;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A stateless Kafka Streams pass-through: the input topics to the output topic, each
 * record's key, value and headers kept (Streams forwards headers to the sink), at
 * {@code processing.guarantee} at_least_once or exactly_once_v2. application.id is the
 * group id the tool gives (so the group, the transactional ids Streams derives from it and
 * the client ids carry the run's prefix); the state directory is beside the state file in
 * the run folder, or a temporary one.
 */
final class PassThrough {
    static final String[] GUARANTEES = {"at_least_once", "exactly_once_v2"};
    /** {@code --topology}: this stateless pass-through, or {@link CountPerKey}'s count */
    static final String[] TOPOLOGIES = {"pass-through", "count"};

    private PassThrough() {
    }

    static Topology topology(Env env) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(env.inputs, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
            .to(env.output, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
        return builder.build();
    }

    static Properties config(Env env, String guarantee, Path stateDir, List<String> args) {
        Properties p = new Properties();
        p.put("application.id", env.group);
        p.put("bootstrap.servers", env.bootstrap);
        p.put("processing.guarantee", guarantee);
        p.put("state.dir", stateDir.toString());
        p.put("num.stream.threads", "1");
        // the input at read_committed as the copiers read it (Streams' at_least_once
        // default is read_uncommitted, which would copy aborted input records)
        p.put("consumer.isolation.level", "read_committed");
        p.put("consumer.auto.offset.reset", "earliest");
        // a killed instance's tasks move after 10 s, not Kafka's 45 s, as the copiers'
        p.put("consumer.session.timeout.ms", String.valueOf(Copier.SESSION_TIMEOUT_MS));
        StreamsTuning.apply(args, p);
        return p;
    }

    static Path stateDir(Env env) throws IOException {
        if (env.stateFile != null) {
            Path state = Path.of(env.stateFile);
            Path dir = state.resolveSibling(env.instance + ".streams");
            Files.createDirectories(dir);
            return dir;
        }
        return Files.createTempDirectory("verifier-streams-");
    }

    /** Run until SIGTERM (the shutdown hook closes Streams, committing what it processed). */
    /** Run {@code topology} (this pass-through's or {@link CountPerKey}'s) as above. */
    static int run(Env env, String guarantee, Topology topology, String what, List<String> args)
            throws IOException, InterruptedException {
        boolean eos = guarantee.equals("exactly_once_v2");
        StateFile state = new StateFile(env.stateFile, env.instance, what + guarantee);
        state.write();
        KafkaStreams streams = new KafkaStreams(topology, config(env, guarantee,
            stateDir(env), args), new Counting(state, eos));
        // as a service would: a failed stream thread is replaced, the instance goes on
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("streams: " + e + "; replacing the thread");
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            closed.countDown();
        }));
        streams.start();
        closed.await();
        return 0;
    }
}
