package verifier.apps;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The Java applications under test (docs/applications.md):
 *
 * <pre>
 *   java -cp '.jars/java-apps-V/*' verifier.apps.Main copier --commit before|after|transactional [--process-ms N]
 *   java -cp '.jars/java-apps-V/*' verifier.apps.Main streams --guarantee at_least_once|exactly_once_v2 [--topology pass-through|count]
 *       [--write-buffer-kb N] [--cache-bytes N] [--commit-ms N] [--buckets N]   (StreamsTuning)
 *   java -cp '.jars/java-apps-V/*' verifier.apps.Main share-copier [--process-ms N]
 *   java -cp '.jars/java-apps-V/*' verifier.apps.Main share-offsets   (the group's, as JSON)
 *   java -cp '.jars/java-apps-V/*' verifier.apps.Main group-type      (classic or consumer)
 * </pre>
 *
 * Everything else comes from the VERIFIER_* environment. Exit 64 on a usage error.
 */
public final class Main {
    private Main() {
    }

    static String option(List<String> args, String name, String fallback) {
        int i = args.indexOf(name);
        return i >= 0 && i + 1 < args.size() ? args.get(i + 1) : fallback;
    }

    public static void main(String[] argv) throws Exception {
        System.exit(run(Arrays.asList(argv), System.getenv()));
    }

    static int run(List<String> args, Map<String, String> environment) throws Exception {
        String kind = args.isEmpty() ? "" : args.get(0);
        String missing = Env.missing(environment);
        if (!missing.isEmpty()) {
            System.err.println("verifier.apps: the environment lacks " + missing
                + " (docs/applications.md)");
            return 64;
        }
        Env env = new Env(environment);
        if (kind.equals("group-type")) {
            System.out.println(GroupConfigs.groupType(env));
            return 0;
        }
        if (kind.equals("share-offsets") || kind.equals("share-copier")) {
            return share(kind, args, env);
        }
        if (kind.equals("streams")) {
            String guarantee = option(args, "--guarantee", "");
            if (!Arrays.asList(PassThrough.GUARANTEES).contains(guarantee)) {
                System.err.println("verifier.apps streams: --guarantee "
                    + String.join("|", PassThrough.GUARANTEES));
                return 64;
            }
            String topology = option(args, "--topology", "pass-through");
            if (topology.equals("count")) {  // stateful: a count per key (CountPerKey)
                return PassThrough.run(env, guarantee, CountPerKey.topology(env,
                    StreamsTuning.buckets(args)), "streams-count-", args);
            }
            if (!topology.equals("pass-through")) {
                System.err.println("verifier.apps streams: --topology "
                    + String.join("|", PassThrough.TOPOLOGIES));
                return 64;
            }
            return PassThrough.run(env, guarantee, PassThrough.topology(env), "streams-", args);
        }
        String strategy = option(args, "--commit", "");
        if (!kind.equals("copier") || !Copier.STRATEGIES.contains(strategy)) {
            System.err.println("usage: verifier.apps.Main copier --commit "
                + String.join("|", Copier.STRATEGIES) + " [--process-ms N] | streams "
                + "--guarantee " + String.join("|", PassThrough.GUARANTEES));
            return 64;
        }
        long processMs = Long.parseLong(option(args, "--process-ms", "200"));
        return loop(new Copier(strategy, env, processMs)::run);
    }

    /** A share group's application or query (ShareOffsets, ShareCopier), found by name:
     * the jar built against kafka-clients before 4.1 leaves them out (KIP-932). */
    private static int share(String kind, List<String> args, Env env) throws Exception {
        Class<?> shares;
        try {
            shares = Class.forName("verifier.apps.ShareOffsets");
        } catch (ClassNotFoundException e) {
            System.err.println("verifier.apps " + kind + ": share groups need kafka-clients "
                + "4.1+; this jar was built against an older release");
            return 64;
        }
        if (kind.equals("share-offsets")) {
            System.out.println(shares.getDeclaredMethod("json", Env.class).invoke(null, env));
            return 0;
        }
        long processMs = Long.parseLong(option(args, "--process-ms", "200"));
        return loop((Loop) shares.getDeclaredMethod("copier", Env.class, long.class)
            .invoke(null, env, processMs));
    }

    /** One run of a copier's loop, until the stop condition holds. */
    interface Loop {
        void run(java.util.function.BooleanSupplier stop) throws InterruptedException;
    }

    /** As a service would: on an error, log, new clients, start over; stop on SIGTERM. */
    private static int loop(Loop copier) throws InterruptedException {
        AtomicBoolean stopping = new AtomicBoolean();
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping.set(true);
            try {
                done.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        try {
            while (!stopping.get()) {
                try {
                    copier.run(stopping::get);
                } catch (RuntimeException e) {
                    // a commit refused after a rebalance, a fenced producer: the group's
                    // committed offsets, new clients, go on
                    System.out.println("java copier: " + e + "; starting over");
                    System.out.flush();
                    if (!stopping.get()) {
                        Thread.sleep(1000);
                    }
                }
            }
        } finally {
            done.countDown();
        }
        return 0;
    }
}
