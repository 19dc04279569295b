package verifier.generator;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * One logical producer, one session per process (producers/generator.py and
 * producers/transactional.py): the session learns from the history what earlier sessions
 * left undone, writes its {@code session} line and runs its mode's loop until --count new
 * records, --duration seconds or a SIGTERM. A clean stop finishes or aborts the open
 * transaction, flushes and closes.
 */
final class Generator {
    /** records announced by one history write and then sent */
    static final int CHUNK = 64;
    static final String CLIENT = "java";

    private final Main.Spec spec;
    private final CountDownLatch stop = new CountDownLatch(1);
    private final History.Resume resume;
    private final int ses;
    private final long started = System.nanoTime();
    long newRecords;
    History.Writer writer;

    private Generator(Main.Spec spec) throws IOException {
        this.spec = spec;
        History.Parsed previous = java.nio.file.Files.exists(spec.historyPath()) ? History.read(spec.historyPath()) : null;
        this.resume = History.resume(previous);
        this.ses = resume.session;
    }

    static int run(Main.Spec spec) {
        Generator g;
        try {
            g = new Generator(spec);
        } catch (IOException e) {
            throw new Main.CannotRun("cannot read history " + spec.historyPath() + ": " + e);
        }
        g.installStopHandlers();
        System.out.println(spec.pid + ": session " + g.ses + ", mode " + spec.mode + ", topic " + spec.topic
                + ", history " + spec.historyPath() + ", client java " + ClientVersion.get());
        try {
            if (spec.mode.equals("transactional")) {
                g.runTransactional();
            } else {
                g.runPlain();
            }
        } finally {
            if (g.writer != null) {
                try {
                    g.writer.close();
                } catch (IOException e) {
                    System.err.println("history close: " + e);
                }
            }
        }
        System.out.println(spec.pid + ": session " + g.ses + " done, " + g.newRecords + " new records");
        return Main.EXIT_OK;
    }

    @SuppressWarnings("sun-api") // sun.misc.Signal: the only way to catch SIGTERM without exiting
    private void installStopHandlers() {
        for (String name : new String[] {"TERM", "INT"}) {
            sun.misc.Signal.handle(new sun.misc.Signal(name), sig -> {
                System.out.println("received signal SIG" + sig.getName() + ": stopping cleanly");
                System.out.flush();
                stop.countDown();
            });
        }
    }

    boolean stopped() {
        return stop.getCount() == 0;
    }

    /** Wait up to {@code seconds}; true when a stop was asked for meanwhile. */
    boolean waitStop(double seconds) {
        try {
            return stop.await((long) (seconds * 1e9), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return true;
        }
    }

    Long remaining() {
        return spec.count == null ? null : spec.count - newRecords;
    }

    boolean running() {
        if (stopped()) return false;
        if (spec.duration != null && (System.nanoTime() - started) / 1e9 >= spec.duration) return false;
        Long left = remaining();
        return left == null || left > 0;
    }

    // --- producer ------------------------------------------------------------------------

    private void checkReachable() {
        long deadline = System.nanoTime() + (long) (spec.connectTimeout * 1e9);
        List<String> tried = new ArrayList<>();
        while (true) {
            tried.clear();
            for (String server : spec.bootstrapServers.split(",")) {
                String s = server.trim();
                int colon = s.lastIndexOf(':');
                try (Socket sock = new Socket()) {
                    sock.connect(new InetSocketAddress(s.substring(0, colon).replace("[", "").replace("]", ""),
                            Integer.parseInt(s.substring(colon + 1))), 2000);
                    return;
                } catch (IOException | RuntimeException e) {
                    tried.add(s + " (" + e.getMessage() + ")");
                }
            }
            if (System.nanoTime() > deadline || waitStop(0.5)) {
                throw new Main.CannotRun("cannot reach Kafka at " + spec.bootstrapServers + ": " + String.join(", ", tried));
            }
        }
    }

    KafkaProducer<byte[], byte[]> buildProducer() {
        checkReachable();
        try {
            return new KafkaProducer<>(Settings.producerProperties(spec.settings));
        } catch (KafkaException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new Main.UsageError("the Java client rejected the producer settings: " + Outcomes.describe(cause));
        }
    }

    List<Integer> partitions(KafkaProducer<byte[], byte[]> producer) {
        List<PartitionInfo> infos;
        try {
            infos = producer.partitionsFor(spec.topic);
        } catch (KafkaException e) {
            throw new Main.CannotRun("topic " + spec.topic + ": " + Outcomes.describe(e));
        }
        TreeSet<Integer> known = new TreeSet<>();
        for (PartitionInfo i : infos) known.add(i.partition());
        if (known.isEmpty()) throw new Main.CannotRun("topic " + spec.topic + " has no partitions");
        if (spec.partitions == null) return new ArrayList<>(known);
        List<Integer> missing = new ArrayList<>();
        for (int p : spec.partitions) if (!known.contains(p)) missing.add(p);
        if (!missing.isEmpty()) {
            throw new Main.UsageError("--partitions " + missing + " do not exist in topic " + spec.topic + " (it has " + known + ")");
        }
        return spec.partitions;
    }

    void openHistory(List<Integer> partitions) throws IOException {
        Map<String, Object> header = Json.obj("run", spec.runId, "pid", spec.pid, "mode", spec.mode,
                "topic", spec.topic, "partitions", partitions);
        writer = new History.Writer(spec.historyPath(), header);
        writer.write(Json.obj("type", "session", "ses", ses, "t", History.nowMs(),
                "config", Settings.redacted(spec.settings), "os_pid", ProcessHandle.current().pid(),
                "client", CLIENT, "client_version", ClientVersion.get()));
    }

    void closeProducer(KafkaProducer<byte[], byte[]> producer, long seconds) {
        try {
            producer.close(Duration.ofSeconds(seconds));
        } catch (RuntimeException e) {
            System.err.println("producer close: " + Outcomes.describe(e));
        }
    }

    /** Round-robin partitions and a dense sequence per partition. */
    static final class Planner {
        final List<Integer> partitions;
        final Map<Integer, Long> nextSeq = new LinkedHashMap<>();
        int i;

        Planner(List<Integer> partitions, Map<Integer, Long> next) {
            this.partitions = partitions;
            for (int p : partitions) nextSeq.put(p, next.getOrDefault(p, 0L));
        }

        long[] next() {
            int p = partitions.get(i++ % partitions.size());
            long seq = nextSeq.get(p);
            nextSeq.put(p, seq + 1);
            return new long[] {p, seq};
        }
    }

    /** A transaction holds at most this many seconds of the rate's records. */
    static final double MAX_TXN_SECONDS = 2.0;

    /** Spaces sends to a target rate (records/s), as producers/emitter.py's Pacer. */
    final class Pacer {
        final double interval;
        final long start = System.nanoTime();
        long n;

        Pacer(Double rate) {
            interval = rate == null ? 0.0 : 1.0 / rate;
        }

        /** Records due but not paced yet: how far behind its schedule the sender is. */
        long due() {
            if (interval == 0.0) return 0;
            return Math.max(0, (long) ((System.nanoTime() - start) / 1e9 / interval) - n);
        }

        /**
         * A new transaction's size: {@code nominal} records, or every record already due
         * when the previous commit took longer than its records were worth, up to
         * {@link #MAX_TXN_SECONDS} of them (as producers/transactional.py's txn_size).
         */
        int txnSize(int nominal) {
            if (interval == 0.0) return nominal;
            long most = Math.max(nominal, (long) (MAX_TXN_SECONDS / interval));
            return (int) Math.min(most, Math.max(nominal, due()));
        }

        int chunk(long most) {
            if (interval == 0.0) return (int) most;
            return (int) Math.max(1, Math.min(most, (long) (0.005 / interval)));
        }

        void pace(Runnable beforePause, int count) {
            if (interval == 0.0) return;
            n += count;
            double delay = (start + n * interval * 1e9 - System.nanoTime()) / 1e9;
            if (delay > 0.001) {
                if (beforePause != null) beforePause.run();
                waitStop(delay);
            }
        }
    }

    // --- at-most-once, at-least-once, idempotent --------------------------------------------

    void runPlain() {
        KafkaProducer<byte[], byte[]> producer = buildProducer();
        try {
            List<Integer> parts = partitions(producer);
            openHistory(parts);
            Emitter em = new Emitter(producer, writer, spec, ses);
            Pacer pacer = new Pacer(spec.rate);
            if (!spec.mode.equals("at-most-once")) {
                List<long[]> resend = resume.unacked; // same ids: cross-session duplicates
                int i = 0;
                while (i < resend.size() && !stopped()) {
                    int k = Math.min(pacer.chunk(CHUNK), resend.size() - i);
                    pacer.pace(em::writeCompletions, k);
                    em.sendMany(resend.subList(i, i + k), null, false);
                    i += k;
                }
            }
            Planner planner = new Planner(parts, resume.nextSeq);
            // the application's input commit after flush() (KAFKA-19479), every so often
            long commitNs = spec.commitAfterFlushMs() * 1_000_000L;
            long lastCommit = System.nanoTime();
            while (running()) {
                Long left = remaining();
                int k = pacer.chunk(left == null ? CHUNK : Math.min(CHUNK, left));
                pacer.pace(em::writeCompletions, k);
                List<long[]> ids = new ArrayList<>(k);
                for (int j = 0; j < k; j++) ids.add(planner.next());
                em.sendMany(ids, null, false);
                newRecords += k;
                if (commitNs > 0 && System.nanoTime() - lastCommit >= commitNs) {
                    em.flushAndCommit();
                    lastCommit = System.nanoTime();
                }
            }
            if (commitNs > 0) {
                em.flushAndCommit();
            } else {
                em.flush();
            }
        } catch (IOException e) {
            throw new Main.CannotRun("history: " + e);
        } finally {
            closeProducer(producer, 10);
        }
    }

    // --- transactional ---------------------------------------------------------------------

    enum TxnResult { COMMITTED, ABORTED, REDO }

    /** Runs transactions on one producer, replacing the producer when it must. */
    final class TxnRunner {
        KafkaProducer<byte[], byte[]> producer;
        Emitter em;
        /** (partition, offset) of the last transaction whose commit ended info */
        List<long[]> unanswered = List.of();
        boolean replace;

        /** A new producer with initTransactions() done (retried while it can be). */
        void connect() {
            if (producer != null) closeProducer(producer, 0);
            producer = buildProducer();
            while (true) {
                try {
                    producer.initTransactions(); // bounded by max.block.ms
                    break;
                } catch (RuntimeException e) {
                    if (Outcomes.classify(e, "init").equals(Outcomes.FAIL)) {
                        throw new Main.CannotRun("initTransactions: " + Outcomes.describe(e));
                    }
                    System.out.println("initTransactions: " + Outcomes.describe(e) + "; retrying");
                    if (waitStop(spec.ms("retry.backoff.ms") / 1000.0)) throw e;
                    if (!(e instanceof org.apache.kafka.common.errors.TimeoutException)) {
                        closeProducer(producer, 0); // anything but a timeout: a fresh producer
                        producer = buildProducer();
                    }
                }
            }
            long[] pe = Emitter.producerIdAndEpoch(producer);
            System.out.println("transactional.id " + spec.settings.get("transactional.id") + ": producer id "
                    + (pe == null ? "?" : pe[0]) + ", epoch " + (pe == null ? "?" : pe[1]));
            if (em != null) {
                em.producer = producer;
                writer.writeRaw(em.producerIdentityLine());
            }
        }

        private void op(String f, long txn, Object... extra) {
            Map<String, Object> line = Json.obj("type", "invoke", "f", f, "ses", ses, "txn", txn);
            for (int k = 0; k < extra.length; k += 2) line.put((String) extra[k], extra[k + 1]);
            line.put("t", History.nowMs());
            writer.write(line);
        }

        private String done(String f, long txn, Throwable exc) {
            String outcome = Outcomes.classify(exc, f);
            Map<String, Object> line = Json.obj("type", outcome, "f", f, "ses", ses, "txn", txn);
            if (exc != null) line.put("error", Outcomes.describe(exc));
            line.put("t", History.nowMs());
            writer.write(line);
            return outcome;
        }

        /** One transaction; sets {@link #replace} when the producer must be replaced. */
        TxnResult run(History.PlannedTxn txn, Pacer pacer) {
            unanswered = List.of();
            replace = false;
            List<List<Integer>> recs = new ArrayList<>();
            for (int[] r : txn.recs) recs.add(List.of(r[0], r[1]));
            op("begin", txn.txn, "abort", txn.abort, "recs", recs);
            try {
                producer.beginTransaction();
            } catch (RuntimeException e) {
                done("begin", txn.txn, e);
                replace = true;
                return TxnResult.REDO;
            }
            done("begin", txn.txn, null);
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            boolean stoppedHere = false;
            int step = pacer.interval > 0 ? 1 : CHUNK; // paced: one record at a time
            for (int i = 0; i < txn.recs.size(); i += step) {
                if (stopped()) {
                    stoppedHere = true; // clean stop: abort this one, a restart redoes it
                    break;
                }
                pacer.pace(em::writeCompletions, 1);
                List<long[]> ids = new ArrayList<>();
                for (int[] r : txn.recs.subList(i, Math.min(i + step, txn.recs.size()))) ids.add(new long[] {r[0], r[1]});
                futures.addAll(em.sendMany(ids, txn.txn, txn.abort));
            }
            // every send's future is checked before the commit
            List<Throwable> failures = em.waitAll(futures);
            if (!failures.isEmpty() || stoppedHere || txn.abort) {
                replace = abort(txn.txn);
                boolean intended = txn.abort && failures.isEmpty() && !stoppedHere;
                return intended ? TxnResult.ABORTED : TxnResult.REDO;
            }
            return commit(txn, futures);
        }

        private boolean abort(long txn) {
            op("abort", txn);
            try {
                producer.abortTransaction();
            } catch (RuntimeException e) {
                done("abort", txn, e);
                return true;
            }
            done("abort", txn, null);
            em.writeCompletions();
            return false;
        }

        private TxnResult commit(History.PlannedTxn txn, List<Future<RecordMetadata>> futures) {
            op("commit", txn.txn);
            try {
                producer.commitTransaction(); // bounded by max.block.ms
            } catch (RuntimeException e) {
                if (done("commit", txn.txn, e).equals(Outcomes.INFO)) { // it may have happened
                    Map<Integer, Long> first = new TreeMap<>(); // one appended offset per partition
                    for (Future<RecordMetadata> f : futures) {
                        try {
                            RecordMetadata m = f == null ? null : f.get(0, TimeUnit.MILLISECONDS);
                            if (m != null && m.offset() >= 0) first.putIfAbsent(m.partition(), m.offset());
                        } catch (Exception ignored) { // not appended: nothing to read back
                        }
                    }
                    List<long[]> probe = new ArrayList<>();
                    first.forEach((p, off) -> probe.add(new long[] {p, off}));
                    unanswered = probe;
                }
                replace = true; // fail or info: a new producer's initTransactions settles it
                return TxnResult.REDO;
            }
            done("commit", txn.txn, null);
            em.writeCompletions();
            return TxnResult.COMMITTED;
        }

        void close() {
            if (em != null) em.writeCompletions();
            if (producer != null) closeProducer(producer, 10);
        }
    }

    void runTransactional() {
        TxnRunner runner = new TxnRunner();
        try {
            runner.connect();
            List<Integer> parts = partitions(runner.producer);
            openHistory(parts);
            runner.em = new Emitter(runner.producer, writer, spec, ses);
            writer.writeRaw(runner.em.producerIdentityLine());
            Planner planner = new Planner(parts, resume.nextSeq);
            // seeded per session, so a restart does not replay the same abort decisions
            java.util.SplittableRandom rng = new java.util.SplittableRandom(seedOf(spec.seed + ":" + spec.pid + ":" + ses));
            Deque<History.PlannedTxn> redo = new ArrayDeque<>(resume.uncommitted);
            long nextTxn = resume.nextTxn;
            Pacer pacer = new Pacer(spec.rate);
            while (!redo.isEmpty() || running()) {
                if (stopped()) break;
                History.PlannedTxn txn;
                if (!redo.isEmpty()) {
                    txn = redo.pollFirst();
                    if (!txn.probe.isEmpty() && committedAfterAll(txn)) continue;
                } else {
                    int size = pacer.txnSize(spec.txnSize); // catch up after a slow commit
                    Long left = remaining();
                    if (left != null) size = (int) Math.min(size, left);
                    List<int[]> recs = new ArrayList<>();
                    for (int k = 0; k < size; k++) {
                        long[] id = planner.next();
                        recs.add(new int[] {(int) id[0], (int) id[1]});
                    }
                    newRecords += size;
                    txn = new History.PlannedTxn(nextTxn++, rng.nextDouble() < spec.abortFraction, recs, List.of());
                }
                TxnResult result = runner.run(txn, pacer);
                if (result == TxnResult.REDO) {
                    redo.addFirst(new History.PlannedTxn(txn.txn, false, txn.recs, runner.unanswered));
                    waitStop(spec.ms("retry.backoff.ms") / 1000.0);
                }
                if (runner.replace && !stopped()) runner.connect();
            }
        } catch (IOException e) {
            throw new Main.CannotRun("history: " + e);
        } finally {
            runner.close();
        }
    }

    /** A 64-bit seed from a text (SHA-256): nearby texts give unrelated sequences. */
    static long seedOf(String text) {
        try {
            byte[] d = java.security.MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return java.nio.ByteBuffer.wrap(d).getLong();
        } catch (java.security.NoSuchAlgorithmException e) {
            return text.hashCode();
        }
    }

    /**
     * Before redoing a transaction whose commit was never answered: read it back at
     * read_committed (the new producer's initTransactions made the coordinator finish it).
     * Redo only when it is known aborted (producers/transactional.py _committed_after_all).
     */
    private boolean committedAfterAll(History.PlannedTxn txn) {
        Boolean seen = commitVisible(txn.probe, 30.0);
        if (Boolean.FALSE.equals(seen)) {
            System.out.println("transaction " + txn.txn + ": its unanswered commit did not happen (read back at read_committed); redoing it");
            return false;
        }
        System.out.println("transaction " + txn.txn + ": its unanswered commit "
                + (seen == null ? "cannot be read back" : "happened") + "; not redoing it");
        return true;
    }

    /** true: a probed record is visible at read_committed; false: the position passed every
     *  probed offset without it; null: could not be told within the timeout. */
    Boolean commitVisible(List<long[]> probe, double timeoutS) {
        java.util.Properties props = new java.util.Properties();
        for (Map.Entry<String, String> e : spec.settings.entrySet()) {
            String k = e.getKey();
            if (k.startsWith("security.") || k.startsWith("sasl.") || k.startsWith("ssl.")) props.put(k, e.getValue());
        }
        props.put("bootstrap.servers", spec.bootstrapServers);
        props.put("isolation.level", "read_committed");
        props.put("enable.auto.commit", "false");
        props.put("client.id", "verifier.readback." + spec.pid);
        props.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        props.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            Map<TopicPartition, Long> want = new LinkedHashMap<>();
            for (long[] pr : probe) want.put(new TopicPartition(spec.topic, (int) pr[0]), pr[1]);
            consumer.assign(want.keySet());
            want.forEach(consumer::seek);
            long deadline = System.nanoTime() + (long) (timeoutS * 1e9);
            while (!want.isEmpty() && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(500));
                for (TopicPartition tp : new ArrayList<>(want.keySet())) {
                    long off = want.get(tp);
                    for (ConsumerRecord<byte[], byte[]> r : polled.records(tp)) {
                        if (r.offset() == off) return Boolean.TRUE;
                    }
                    if (consumer.position(tp) > off) want.remove(tp); // skipped: aborted, then a marker
                }
            }
            return want.isEmpty() ? Boolean.FALSE : null;
        } catch (RuntimeException e) { // unknown is a safe answer: do not redo
            System.out.println("read-back of " + spec.topic + ": " + Outcomes.describe(e));
            return null;
        }
    }
}
