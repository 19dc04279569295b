package verifier.apps;

import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.common.TopicPartition;

/**
 * What the tool asks of an application's group with Kafka's Admin. A share group's start
 * offset per partition (KIP-932's share-partition start offset:
 * every record below it was acknowledged or archived), as the drain and the read-back of
 * the tool ask it: {"topic-partition": offset}. kafka-python has no share-group API.
 *
 * <p>This class and ShareCopier need kafka-clients 4.1+ (KIP-932's Admin and consumer): the
 * build leaves every Share*.java out against an older release (the pom's apps.excludes,
 * verifier/rundata/jvm.py), and Main reaches them by name.
 */
final class ShareOffsets {
    private ShareOffsets() {
    }

    /** For Main, found by name: {@link Main.Loop} of the share copier (KafkaShareConsumer). */
    static Main.Loop copier(Env env, long processMs) {
        return new ShareCopier(env, processMs)::run;
    }

    static String json(Env env) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", env.bootstrap);
        p.put("client.id", env.group + ".offsets");
        Map<String, Long> out = new TreeMap<>();
        try (Admin admin = Admin.create(p)) {
            Map<String, ListShareGroupOffsetsSpec> spec = Map.of(env.group,
                new ListShareGroupOffsetsSpec());
            var all = admin.listShareGroupOffsets(spec).all().get(30, TimeUnit.SECONDS);
            var partitions = all.get(env.group);
            if (partitions != null) {
                for (Map.Entry<TopicPartition, ?> e : partitions.entrySet()) {
                    Long offset = startOffset(e.getValue());
                    if (offset != null && offset >= 0) {
                        out.put(e.getKey().topic() + "-" + e.getKey().partition(), offset);
                    }
                }
            }
        }
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Long> e : out.entrySet()) {
            b.append(b.length() > 1 ? ", " : "").append(Json.str(e.getKey())).append(": ")
                .append(e.getValue());
        }
        return b.append("}").toString();
    }

    /** A Long (kafka-clients 4.1) or a SharePartitionOffsetInfo (4.2+): its start offset. */
    private static Long startOffset(Object value) throws ReflectiveOperationException {
        if (value == null) {
            return null;
        }
        if (value instanceof Long l) {
            return l;
        }
        return (Long) value.getClass().getMethod("startOffset").invoke(value);
    }
}
