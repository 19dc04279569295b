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
 */
final class ShareOffsets {
    private ShareOffsets() {
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

    /** The consumer group's type as the broker describes it: {"type": "classic"} or
     * {"type": "consumer"} (KIP-848). */
    static String groupType(Env env) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", env.bootstrap);
        p.put("client.id", env.group + ".describe");
        try (Admin admin = Admin.create(p)) {
            var described = admin.describeConsumerGroups(java.util.List.of(env.group))
                .describedGroups().get(env.group).get(30, TimeUnit.SECONDS);
            return "{\"type\": " + Json.str(String.valueOf(described.type())) + "}";
        }
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
