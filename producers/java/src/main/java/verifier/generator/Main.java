package verifier.generator;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code java -cp '.jars/java-generator-V/*' verifier.generator.Main --plan RUN/config.json --pid P}:
 * the Java load generator, one logical producer, one session per process. Same flags,
 * plan and exit codes as {@code python -m producers} (producers/cli.py): 0 a clean stop,
 * 2 could not run (Kafka unreachable), 64 usage.
 *
 * <p>{@code --outcome-table} prints the exception table; {@code --classify} reads lines
 * {@code OP<TAB>EXCEPTION CLASS<TAB>MESSAGE} and prints each one's outcome (the unit tier
 * checks the table through it). {@code --validate-config FILE} runs the client's own
 * configuration checks on a properties file, without a broker ({@link Validate});
 * {@code --print-user-records PYTHON PLAN PID} prints what the record server makes
 * ({@link UserRecords}).
 */
public final class Main {
    static final int EXIT_OK = 0;
    static final int EXIT_CANNOT_RUN = 2;
    static final int EXIT_USAGE = 64;
    static final String SECRETS_ENV = "VERIFIER_CLIENT_SECRETS";
    static final String[] SECRET_KWARGS = {"sasl_plain_password", "ssl_password", "sasl_oauth_token_provider"};

    private Main() {}

    static final class UsageError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }

    static final class CannotRun extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CannotRun(String message) {
            super(message);
        }
    }

    /** Everything one generator process needs (producers/generator.py GeneratorSpec). */
    static final class Spec {
        Path runDir;
        String runId;
        String mode;
        String pid;
        String topic;
        String bootstrapServers;
        Map<String, String> settings;
        List<Integer> partitions;
        Long count;
        Double duration;
        Double rate;
        int txnSize = 10;
        double abortFraction;
        long seed;
        double connectTimeout = 30.0;
        /** the plan, when the generator runs one; a pipeline file's records need it */
        Path plan;
        /** the plan names this producer in {@code user_input}: a pipeline file's records ({@link UserRecords}) */
        boolean userInput;
        /** the Python that serves them (--python; the launcher passes its own) */
        String python = "python3";

        Path historyPath() {
            return runDir.resolve("histories").resolve(pid + ".jsonl");
        }

        int recordSize() {
            return Integer.parseInt(settings.get(Settings.RECORD_SIZE));
        }

        long ms(String key) {
            return Long.parseLong(settings.get(key));
        }

        /** {@code commit.after.flush.ms}, 0 when absent: commit on each send's callback. */
        long commitAfterFlushMs() {
            return Long.parseLong(settings.getOrDefault(Settings.COMMIT_AFTER_FLUSH_MS, "0"));
        }
    }

    public static void main(String[] argv) {
        int code;
        try {
            code = run(argv);
        } catch (UsageError e) {
            System.err.println("java generator: usage error: " + e.getMessage());
            code = EXIT_USAGE;
        } catch (CannotRun e) {
            System.err.println("java generator: error: " + e.getMessage());
            code = EXIT_CANNOT_RUN;
        }
        System.out.flush();
        System.exit(code);
    }

    static int run(String[] argv) {
        Map<String, String> a = new LinkedHashMap<>();
        List<String> sets = new ArrayList<>();
        for (int k = 0; k < argv.length; k++) {
            String flag = argv[k];
            if (flag.equals("--outcome-table")) {
                Outcomes.markdown().forEach(System.out::println);
                return EXIT_OK;
            }
            if (flag.equals("--classify")) {
                return classify();
            }
            if (flag.equals("--print-user-records")) { // the record server's framing, no broker
                if (k + 3 >= argv.length) throw new UsageError(flag + " needs PYTHON PLAN PID");
                try {
                    return UserRecords.print(argv[k + 1], argv[k + 2], argv[k + 3]);
                } catch (java.io.IOException e) {
                    throw new CannotRun(flag + ": " + e);
                }
            }
            if (flag.equals("--validate-config")) { // verifier advise: no broker, no run
                if (k + 1 >= argv.length) throw new UsageError(flag + " needs a properties file");
                return Validate.run(Path.of(argv[k + 1]));
            }
            if (!flag.startsWith("--")) throw new UsageError("unexpected argument " + flag);
            if (k + 1 >= argv.length) throw new UsageError(flag + " needs a value");
            String value = argv[++k];
            if (flag.equals("--set")) {
                sets.add(value);
            } else {
                a.put(flag.substring(2), value);
            }
        }
        Spec spec = spec(a, sets);
        System.out.println("effective producer config: " + Json.write(Settings.redacted(spec.settings)));
        System.out.flush();
        return Generator.run(spec);
    }

    /** Lines "OP\tCLASS\tMESSAGE" on stdin -> "OUTCOME\tMATCHED ROW'S EXCEPTION" on stdout. */
    private static int classify() {
        java.io.BufferedReader in = new java.io.BufferedReader(
                new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8));
        try {
            for (String line; (line = in.readLine()) != null; ) {
                if (line.isBlank()) continue;
                String[] f = line.split("\t", 3);
                if (f.length < 2) throw new UsageError("--classify: expected OP<TAB>CLASS[<TAB>MESSAGE], got " + line);
                Throwable e;
                try {
                    e = (Throwable) Class.forName(f[1]).getConstructor(String.class)
                            .newInstance(f.length > 2 ? f[2] : "test");
                } catch (ReflectiveOperationException | ClassCastException ex) {
                    throw new UsageError("cannot make a " + f[1] + "(String): " + ex);
                }
                Outcomes.Rule rule = Outcomes.rule(e, f[0]);
                System.out.println(rule.outcome + "\t" + rule.exception);
            }
        } catch (java.io.IOException ex) {
            throw new CannotRun("--classify: " + ex);
        }
        return EXIT_OK;
    }

    private static final List<String> PLANNED = List.of("run-dir", "run-id", "mode", "topic",
            "bootstrap-servers", "rate", "record-size", "txn-size", "abort-fraction", "seed");
    private static final List<String> KNOWN = List.of("plan", "pid", "run-dir", "run-id", "mode",
            "topic", "bootstrap-servers", "partitions", "count", "duration", "rate", "record-size",
            "txn-size", "abort-fraction", "seed", "connect-timeout", "python");

    @SuppressWarnings("unchecked")
    static Spec spec(Map<String, String> a, List<String> sets) {
        for (String k : a.keySet()) {
            if (!KNOWN.contains(k)) throw new UsageError("unknown flag --" + k);
        }
        if (!a.containsKey("pid")) throw new UsageError("--pid is required");
        Spec s = new Spec();
        s.pid = a.get("pid");
        Map<String, Object> planned = new LinkedHashMap<>();
        Long recordSize = null;
        if (a.containsKey("plan")) {
            List<String> clash = new ArrayList<>();
            for (String k : PLANNED) if (a.containsKey(k)) clash.add("--" + k);
            if (!clash.isEmpty()) throw new UsageError(String.join(", ", clash) + ": given by the plan, leave out with --plan");
            Path planPath = Path.of(a.get("plan"));
            Map<String, Object> plan;
            try {
                plan = Json.parseObject(Files.readString(planPath));
            } catch (java.io.IOException | Json.ParseError e) {
                throw new UsageError("cannot read the plan " + planPath + ": " + e.getMessage());
            }
            if (!"run-config".equals(plan.get("format"))) throw new UsageError(planPath + " is not a run plan");
            Map<String, Object> producers = (Map<String, Object>) plan.getOrDefault("producers", Map.of());
            Map<String, Object> p = (Map<String, Object>) producers.get(s.pid);
            if (p == null) throw new UsageError("producer '" + s.pid + "' is not in the plan (known: " + String.join(", ", producers.keySet()) + ")");
            s.runDir = planPath.toAbsolutePath().getParent();
            s.plan = planPath;
            s.userInput = ((Map<String, Object>) plan.getOrDefault("user_input", Map.of())).containsKey(s.pid);
            s.runId = String.valueOf(plan.get("run"));
            s.mode = String.valueOf(p.getOrDefault("expect", p.get("mode")));
            s.topic = String.valueOf(p.get("topic"));
            s.bootstrapServers = String.valueOf(plan.get("bootstrap_servers"));
            s.seed = plan.get("seed") == null ? 0 : Json.asLong(plan.get("seed"));
            Map<String, Object> w = (Map<String, Object>) plan.getOrDefault("workload", Map.of());
            if (w.get("rate") != null) s.rate = ((Number) w.get("rate")).doubleValue();
            if (w.get("record_size") != null) recordSize = Json.asLong(w.get("record_size"));
            if (w.get("txn_size") != null) s.txnSize = Json.asInt(w.get("txn_size"));
            if (w.get("abort_fraction") != null) s.abortFraction = ((Number) w.get("abort_fraction")).doubleValue();
            planned.putAll((Map<String, Object>) plan.getOrDefault("security", Map.of()));
            planned.putAll((Map<String, Object>) p.getOrDefault("overrides", Map.of()));
            unredact(planned);
        } else {
            List<String> missing = new ArrayList<>();
            for (String k : List.of("run-dir", "run-id", "mode", "topic", "bootstrap-servers")) {
                if (!a.containsKey(k)) missing.add("--" + k);
            }
            if (!missing.isEmpty()) throw new UsageError(String.join(", ", missing) + " required (or --plan RUN/config.json)");
            s.runDir = Path.of(a.get("run-dir")).toAbsolutePath();
            s.runId = a.get("run-id");
            s.mode = a.get("mode");
            s.topic = a.get("topic");
            s.bootstrapServers = a.get("bootstrap-servers");
            if (a.containsKey("rate")) s.rate = Double.parseDouble(a.get("rate"));
            if (a.containsKey("record-size")) recordSize = Long.parseLong(a.get("record-size"));
            if (a.containsKey("txn-size")) s.txnSize = Integer.parseInt(a.get("txn-size"));
            if (a.containsKey("abort-fraction")) s.abortFraction = Double.parseDouble(a.get("abort-fraction"));
            if (a.containsKey("seed")) s.seed = Long.parseLong(a.get("seed"));
        }
        if (a.containsKey("count")) s.count = Long.parseLong(a.get("count"));
        if (a.containsKey("duration")) s.duration = Double.parseDouble(a.get("duration"));
        if (a.containsKey("python")) s.python = a.get("python");
        if (a.containsKey("connect-timeout")) s.connectTimeout = Double.parseDouble(a.get("connect-timeout"));
        if (a.containsKey("partitions")) {
            s.partitions = new ArrayList<>();
            for (String part : a.get("partitions").split(",")) {
                if (!part.isBlank()) s.partitions.add(Integer.parseInt(part.trim()));
            }
        }
        List<String> problems = new ArrayList<>();
        if (s.count != null && s.count < 0) problems.add("--count must be >= 0");
        if (s.rate != null && s.rate <= 0) problems.add("--rate must be > 0");
        if (s.txnSize < 1) problems.add("--txn-size must be >= 1");
        if (s.abortFraction < 0 || s.abortFraction > 1) problems.add("--abort-fraction must be within [0, 1]");
        if (!problems.isEmpty()) throw new UsageError(String.join("; ", problems));
        s.settings = Settings.resolve(s.mode, planned, s.runId + "." + s.pid);
        for (String kv : sets) {
            int eq = kv.indexOf('=');
            if (eq <= 0) throw new UsageError("--set " + kv + ": expected KEY=VALUE");
            s.settings.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
        }
        if (recordSize != null) s.settings.put(Settings.RECORD_SIZE, String.valueOf(recordSize));
        s.settings.putIfAbsent("client.id", "verifier.generator." + s.pid);
        s.settings.put("bootstrap.servers", s.bootstrapServers);
        s.settings.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        s.settings.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        List<String> found = Settings.conflicts(s.mode, s.settings);
        if (!found.isEmpty()) {
            throw new UsageError("conflicting producer settings for mode " + s.mode + ": " + String.join("; ", found));
        }
        return s;
    }

    /** Replace every redacted secret with its value from $VERIFIER_CLIENT_SECRETS. */
    private static void unredact(Map<String, Object> settings) {
        String env = System.getenv(SECRETS_ENV);
        Map<String, Object> given = Map.of();
        if (env != null && !env.isBlank()) {
            try {
                given = Json.parseObject(env);
            } catch (Json.ParseError e) {
                throw new UsageError("$" + SECRETS_ENV + " is not a JSON object");
            }
        }
        List<String> missing = new ArrayList<>();
        for (String k : SECRET_KWARGS) {
            if ("***".equals(settings.get(k))) {
                if (given.containsKey(k)) {
                    settings.put(k, given.get(k));
                } else {
                    missing.add(k);
                }
            }
        }
        if (!missing.isEmpty()) {
            throw new UsageError("the plan's " + String.join(", ", missing) + " is redacted and $"
                    + SECRETS_ENV + " does not carry it");
        }
    }
}
