package verifier.apps;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;

/**
 * A group's own configuration (KIP-848 and KIP-932 group configs, brokers 4.0+), set as an
 * operator or the application would with {@code Admin.incrementalAlterConfigs} on the
 * GROUP resource before the first poll: the session timeout of a consumer-protocol or
 * share group is the group's, not the client's.
 */
final class GroupConfigs {
    private GroupConfigs() {
    }

    /** Set {@code configs} on the instance's group; false (and the refusal in the state
     * file's errors) when the broker refused them: the group keeps its defaults. */
    static boolean set(Env env, StateFile state, Map<String, String> configs) {
        Properties p = new Properties();
        p.put("bootstrap.servers", env.bootstrap);
        p.put("client.id", env.group + "." + env.instance + ".admin");
        List<AlterConfigOp> ops = new ArrayList<>();
        for (Map.Entry<String, String> e : configs.entrySet()) {
            ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()),
                AlterConfigOp.OpType.SET));
        }
        try (Admin admin = Admin.create(p)) {
            // by name: kafka-clients before 4.0 has no GROUP resource (refused, as a broker
            // before 4.0 refuses it)
            ConfigResource group = new ConfigResource(ConfigResource.Type.valueOf("GROUP"),
                env.group);
            admin.incrementalAlterConfigs(Map.of(group, ops)).all().get(30, TimeUnit.SECONDS);
            return true;
        } catch (Exception e) {
            System.out.println("group configs " + configs + " refused: " + e);
            System.out.flush();
            state.error(e);
            return false;
        }
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
}
