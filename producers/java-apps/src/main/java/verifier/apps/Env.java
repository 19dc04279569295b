package verifier.apps;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The environment contract of an application under test (docs/applications.md). */
final class Env {
    static final String[] REQUIRED = {"VERIFIER_BOOTSTRAP_SERVERS", "VERIFIER_INPUT_TOPICS",
        "VERIFIER_OUTPUT_TOPIC", "VERIFIER_GROUP_ID", "VERIFIER_TRANSACTIONAL_ID_PREFIX"};

    final String bootstrap;
    final List<String> inputs = new ArrayList<>();
    final String output;
    final String group;
    final String transactionalIdPrefix;
    final String instance;
    /** where the instance says what it is doing, or null */
    final String stateFile;
    /** VERIFIER_GROUP_PROTOCOL: "classic", "consumer" (KIP-848), or "" (the default) */
    final String groupProtocol;

    Env(Map<String, String> env) {
        bootstrap = env.get("VERIFIER_BOOTSTRAP_SERVERS");
        for (String t : env.get("VERIFIER_INPUT_TOPICS").split(",")) {
            if (!t.isBlank()) {
                inputs.add(t.trim());
            }
        }
        output = env.get("VERIFIER_OUTPUT_TOPIC");
        group = env.get("VERIFIER_GROUP_ID");
        transactionalIdPrefix = env.get("VERIFIER_TRANSACTIONAL_ID_PREFIX");
        instance = env.getOrDefault("VERIFIER_INSTANCE", "0");
        String state = env.get("VERIFIER_STATE_FILE");
        stateFile = state == null || state.isBlank() ? null : state;
        groupProtocol = env.getOrDefault("VERIFIER_GROUP_PROTOCOL", "").trim();
    }

    /** The required variables that are missing or empty, comma-separated ("" when none). */
    static String missing(Map<String, String> env) {
        List<String> out = new ArrayList<>();
        for (String k : REQUIRED) {
            String v = env.get(k);
            if (v == null || v.isBlank()) {
                out.add(k);
            }
        }
        return String.join(", ", out);
    }
}
