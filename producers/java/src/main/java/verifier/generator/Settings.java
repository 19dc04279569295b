package verifier.generator;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Producer presets per delivery mode, in Java property names: the same values as the
 * kafka-python presets (producers/config.py DEFAULTS and PRESETS), every mode-defining
 * setting explicit. Settings arriving from the run plan (the clients' security settings,
 * a user column's overrides) use the plan's kafka-python names and are mapped here.
 */
final class Settings {
    private Settings() {}

    static final String MAX_INT = String.valueOf(Integer.MAX_VALUE);

    /** Generator-side knob, never passed to the producer: the record value size. */
    static final String RECORD_SIZE = "record.size";
    /** Generator-side knob: commit the input after flush() every so many ms (Emitter). */
    static final String COMMIT_AFTER_FLUSH_MS = "commit.after.flush.ms";

    static Map<String, String> defaults() {
        Map<String, String> m = new TreeMap<>();
        m.put("batch.size", "16384");
        m.put("linger.ms", "5");
        m.put("buffer.memory", String.valueOf(32 * 1024 * 1024));
        m.put(RECORD_SIZE, "200");
        m.put("compression.type", "none");
        m.put("request.timeout.ms", "30000");
        m.put("delivery.timeout.ms", "120000");
        m.put("retry.backoff.ms", "100");
        m.put("max.block.ms", "60000");
        return m;
    }

    static Map<String, String> preset(String mode) {
        Map<String, String> m = new TreeMap<>();
        m.put("max.in.flight.requests.per.connection", "5");
        switch (mode) {
            case "at-most-once":
                m.put("enable.idempotence", "false");
                m.put("acks", "1");
                m.put("retries", "0");
                break;
            case "at-least-once":
                m.put("enable.idempotence", "false");
                m.put("acks", "all");
                m.put("retries", MAX_INT);
                break;
            case "idempotent":
                m.put("enable.idempotence", "true");
                m.put("acks", "all");
                m.put("retries", MAX_INT);
                break;
            case "transactional":
                m.put("enable.idempotence", "true");
                m.put("acks", "all");
                m.put("retries", MAX_INT);
                m.put("transaction.timeout.ms", "30000");
                // With transactions V2 (Kafka 4.x brokers) a transaction's first produce to
                // a partition is answered CONCURRENT_TRANSACTIONS until the previous
                // transaction's markers are written, and the client retries it on the
                // produce path's exponential backoff (100 ms up to 1 s): ~1.5 s per
                // 10-record transaction on a loaded machine. kafka-python's generator
                // retries transactional requests after 20 ms for the same reason
                // (producers/transactional.py fast_txn_retries); here it is a setting.
                m.put("retry.backoff.ms", "20");
                m.put("retry.backoff.max.ms", "100");
                break;
            default:
                throw new Main.UsageError("unknown mode " + mode
                        + "; expected one of at-most-once, at-least-once, idempotent, transactional");
        }
        return m;
    }

    /** kafka-python setting name (the plan's) -> Java property name, where they differ
     *  by more than '_' versus '.'. */
    private static String javaName(String kwarg) {
        switch (kwarg) {
            case "sasl_plain_username": return "sasl.username";
            case "sasl_plain_password": return "sasl.password";
            case "ssl_cafile": return "ssl.truststore.location";
            case "ssl_certfile": return "ssl.keystore.location";
            case "ssl_keyfile": return "ssl.key.location";
            case "ssl_password": return "ssl.key.password";
            case "ssl_crlfile": return "ssl.crl.location";
            case "ssl_ciphers": return "ssl.cipher.suites";
            case "ssl_check_hostname": return "ssl.endpoint.identification.algorithm";
            default: return kwarg.replace('_', '.');
        }
    }

    private static String javaValue(String key, Object v) {
        if (key.equals("acks") && v instanceof Number && ((Number) v).longValue() == -1) return "all";
        if (key.equals("compression.type") && v == null) return "none";
        if (key.equals("ssl.endpoint.identification.algorithm")) {
            return Boolean.FALSE.equals(v) ? "" : "https";
        }
        if (v instanceof Double && ((Double) v) == Math.rint((Double) v)) return String.valueOf(((Double) v).longValue());
        return String.valueOf(v);
    }

    /**
     * defaults, then the mode's preset, then the plan's settings (kafka-python names), then
     * the transactional id; SASL user and password become a JAAS line, PEM files get their
     * store types.
     */
    static Map<String, String> resolve(String mode, Map<String, Object> planned, String transactionalId) {
        Map<String, String> s = defaults();
        s.putAll(preset(mode));
        String user = null;
        String password = null;
        for (Map.Entry<String, Object> e : planned.entrySet()) {
            String key = javaName(e.getKey());
            if (key.equals("sasl.username")) {
                user = String.valueOf(e.getValue());
            } else if (key.equals("sasl.password")) {
                password = String.valueOf(e.getValue());
            } else if (key.equals("sasl.jaas.config") && e.getValue() == null) {
                continue;
            } else {
                s.put(key, javaValue(key, e.getValue()));
            }
        }
        if (user != null) {
            String mech = s.getOrDefault("sasl.mechanism", "PLAIN");
            String module = mech.startsWith("SCRAM")
                    ? "org.apache.kafka.common.security.scram.ScramLoginModule"
                    : "org.apache.kafka.common.security.plain.PlainLoginModule";
            s.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\""
                    + (password == null ? "" : password) + "\";");
        }
        if (s.containsKey("ssl.truststore.location")) s.putIfAbsent("ssl.truststore.type", "PEM");
        if (s.containsKey("ssl.keystore.location")) s.putIfAbsent("ssl.keystore.type", "PEM");
        if (mode.equals("transactional") && !s.containsKey("transactional.id")) {
            s.put("transactional.id", transactionalId);
        }
        List<String> problems = conflicts(mode, s);
        if (!problems.isEmpty()) {
            throw new Main.UsageError("conflicting producer settings for mode " + mode + ": "
                    + String.join("; ", problems));
        }
        return s;
    }

    /** The mode conflicts producers/config.py refuses, in Java names. */
    static List<String> conflicts(String mode, Map<String, String> s) {
        List<String> out = new ArrayList<>();
        boolean idem = Boolean.parseBoolean(s.getOrDefault("enable.idempotence", "true"));
        String acks = s.getOrDefault("acks", "all");
        boolean acksAll = acks.equals("all") || acks.equals("-1");
        long retries = Long.parseLong(s.getOrDefault("retries", MAX_INT));
        if ((mode.equals("idempotent") || mode.equals("transactional")) && !idem) {
            out.add("enable.idempotence=false: mode " + mode + " needs idempotence");
        }
        if ((mode.equals("at-most-once") || mode.equals("at-least-once")) && idem) {
            out.add("enable.idempotence=true: mode " + mode + " runs without idempotence (use mode idempotent)");
        }
        if (mode.equals("at-most-once") && retries != 0) out.add("retries=" + retries + ": at-most-once never retries (retries=0)");
        if (mode.equals("at-least-once") && retries == 0) out.add("retries=0: at-least-once needs retries > 0");
        if (mode.equals("at-least-once") && acks.equals("0")) out.add("acks=0: at-least-once needs acknowledgements (1 or all)");
        if (s.containsKey("transactional.id") && !mode.equals("transactional")) {
            out.add("transactional.id: mode " + mode + " is not transactional");
        }
        if (idem && !acksAll) out.add("enable.idempotence=true, acks=" + acks + ": idempotence needs acks=all");
        if (idem && retries == 0) out.add("enable.idempotence=true, retries=0: idempotence needs retries > 0");
        return out;
    }

    /** The producer's properties: everything but the generator-side knobs. */
    static java.util.Properties producerProperties(Map<String, String> s) {
        java.util.Properties p = new java.util.Properties();
        for (Map.Entry<String, String> e : s.entrySet()) {
            if (!e.getKey().equals(RECORD_SIZE) && !e.getKey().equals(COMMIT_AFTER_FLUSH_MS)) p.put(e.getKey(), e.getValue());
        }
        return p;
    }

    static boolean isSecret(String key) {
        return key.equals("sasl.jaas.config") || key.endsWith(".password") || key.equals("sasl.password");
    }

    /** A copy safe to print and to write into the history. */
    static Map<String, Object> redacted(Map<String, String> s) {
        Map<String, Object> m = new TreeMap<>();
        for (Map.Entry<String, String> e : s.entrySet()) {
            m.put(e.getKey(), isSecret(e.getKey()) ? "***" : e.getValue());
        }
        return m;
    }
}
