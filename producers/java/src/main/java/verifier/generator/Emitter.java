package verifier.generator;

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * One send with its history lines: {@code invoke} before, {@code ok}/{@code fail}/{@code info}
 * after (producers/emitter.py). A chunk's {@code invoke} lines, with the completions that
 * arrived meanwhile (queued by the producer's I/O thread), reach the OS in one write before
 * the first record of the chunk is handed to {@code send()}; the history has one writer
 * thread. Java's {@code send()} blocks on a full {@code buffer.memory} itself.
 */
final class Emitter {
    private static final class Completion {
        final int p;
        final long seq;
        final Long txn;
        final long offset;
        final Throwable exc;
        final long t;
        final String op;

        Completion(int p, long seq, Long txn, long offset, Throwable exc, long t, String op) {
            this.p = p;
            this.seq = seq;
            this.txn = txn;
            this.offset = offset;
            this.exc = exc;
            this.t = t;
            this.op = op;
        }
    }

    KafkaProducer<byte[], byte[]> producer;
    private final History.Writer writer;
    private final String topic;
    private final String run;
    private final String pid;
    private final int ses;
    private final int recordSize;
    private final byte[] pidColon; // the key's first part (records.py: the key)
    private final boolean acks0;
    private final long completionTimeoutMs;
    private final ConcurrentLinkedQueue<Completion> done = new ConcurrentLinkedQueue<>();
    /** the thread inside send(): a callback on it means send() failed before enqueueing */
    private volatile Thread sending;
    private long lastProducerId = Long.MIN_VALUE;
    private short lastEpoch = Short.MIN_VALUE;
    /**
     * {@code commit.after.flush.ms} (issue 50, KAFKA-19479): the application commits its
     * input after {@code flush()} instead of waiting for each send's callback, as Kafka
     * Streams at-least-once does: every record sent and not reported failed when flush()
     * returns is taken as written. Then the records sent and not yet answered, by
     * "p:seq", and those committed while still in flight (their later answer is not the
     * application's outcome any more: one outcome line per record).
     */
    private final boolean commitAfterFlush;
    private final java.util.Map<String, long[]> outstanding = new java.util.LinkedHashMap<>();
    private final java.util.Set<String> committedInFlight = new java.util.HashSet<>();
    /** a pipeline file's records (issue 46), their identity in a header; null: the tool's values */
    private final UserRecords records;

    Emitter(KafkaProducer<byte[], byte[]> producer, History.Writer writer, Main.Spec spec, int ses) {
        this.producer = producer;
        this.writer = writer;
        this.topic = spec.topic;
        this.run = spec.runId;
        this.pid = spec.pid;
        this.ses = ses;
        this.records = spec.userInput ? UserRecords.start(spec) : null;
        // a user's record carries the unpadded value as its identity
        this.recordSize = records == null ? spec.recordSize() : 0;
        this.pidColon = (spec.pid + ":").getBytes(StandardCharsets.UTF_8);
        this.acks0 = "0".equals(spec.settings.get("acks"));
        // a send's future always completes by delivery.timeout.ms (batch expiry); the margin
        // covers the request in flight when the batch expires
        this.completionTimeoutMs = spec.ms("delivery.timeout.ms") + spec.ms("request.timeout.ms");
        this.commitAfterFlush = spec.commitAfterFlushMs() > 0;
    }

    private static final byte[] SEQ = ",\"seq\":".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] PAD = ",\"pad\":\"".getBytes(StandardCharsets.US_ASCII);

    /** The values of one chunk (one session, one send time), each byte for byte what
     *  verifier/rundata/records.py:encode_value makes: the part before {@code p} and the part
     *  after {@code seq} encoded once, each value written straight into an array of its final
     *  length (one allocation a record, where a builder, a string and two copies were). */
    static List<byte[]> encodeValues(String run, String pid, int ses, List<long[]> idents, Long txn,
                                     boolean abort, long ts, int size) {
        StringBuilder h = new StringBuilder(96).append("{\"v\":1,\"run\":");
        Json.string(h, run);
        h.append(",\"pid\":");
        Json.string(h, pid);
        h.append(",\"ses\":").append(ses).append(",\"p\":");
        byte[] head = h.toString().getBytes(StandardCharsets.UTF_8);
        byte[] tail = (",\"txn\":" + (txn == null ? "null" : txn.toString()) + ",\"abort\":" + abort
                + ",\"ts\":" + ts).getBytes(StandardCharsets.US_ASCII);
        List<byte[]> out = new ArrayList<>(idents.size());
        for (long[] id : idents) {
            long p = id[0];
            long seq = id[1];
            int raw = head.length + digits(p) + SEQ.length + digits(seq) + tail.length + 1; // with '}'
            int pad = size - raw - 9; // ',"pad":""' costs 9 bytes inside the object
            byte[] v = new byte[size <= raw ? raw : raw + 9 + Math.max(0, pad)];
            int k = put(v, 0, head);
            k = putDigits(v, k, p);
            k = put(v, k, SEQ);
            k = putDigits(v, k, seq);
            k = put(v, k, tail);
            if (size > raw) {
                k = put(v, k, PAD);
                for (int j = 0; j < pad; j++) v[k++] = 'x';
                v[k++] = '"';
            }
            v[k] = '}';
            out.add(v);
        }
        return out;
    }

    /** The record key {@code <pid>:<p>:<seq>} (records.py), from the pid's bytes and ':'. */
    static byte[] key(byte[] pidColon, long p, long seq) {
        byte[] k = new byte[pidColon.length + digits(p) + 1 + digits(seq)];
        int i = putDigits(k, put(k, 0, pidColon), p);
        k[i++] = ':';
        putDigits(k, i, seq);
        return k;
    }

    private static int put(byte[] to, int at, byte[] from) {
        System.arraycopy(from, 0, to, at, from.length);
        return at + from.length;
    }

    /** Decimal digits of {@code n} (a partition or a sequence: never negative). */
    static int digits(long n) {
        if (n < 0) throw new IllegalArgumentException("negative: " + n);
        int d = 1;
        while (n >= 10) {
            n /= 10;
            d++;
        }
        return d;
    }

    private static int putDigits(byte[] to, int at, long n) {
        int end = at + digits(n);
        int i = end;
        do {
            to[--i] = (byte) ('0' + n % 10);
            n /= 10;
        } while (n > 0);
        return end;
    }

    /** Send records (pid, p, seq) for each {p, seq}; one write announces them all. Returns
     *  their futures ({@code null} where send() raised; its fail line is then written). */
    List<Future<RecordMetadata>> sendMany(List<long[]> idents, Long txn, boolean abort) {
        long ts = History.nowMs();
        StringBuilder lines = new StringBuilder(completionLines());
        List<byte[]> values = encodeValues(run, pid, ses, idents, txn, abort, ts, recordSize);
        for (long[] id : idents) {
            lines.append("{\"type\":\"invoke\",\"f\":\"send\",\"ses\":").append(ses)
                    .append(",\"p\":").append(id[0]).append(",\"seq\":").append(id[1])
                    .append(",\"txn\":").append(txn == null ? "null" : txn.toString())
                    .append(",\"t\":").append(ts).append("}\n");
        }
        writer.writeRaw(lines);
        List<UserRecords.Made> made = records == null ? null : records.make(topic, idents, values);
        List<Future<RecordMetadata>> futures = new ArrayList<>(idents.size());
        for (int k = 0; k < idents.size(); k++) {
            int p = (int) idents.get(k)[0];
            long seq = idents.get(k)[1];
            ProducerRecord<byte[], byte[]> record;
            if (made == null) {
                record = new ProducerRecord<>(topic, p, key(pidColon, p, seq), values.get(k));
            } else if (made.get(k).error == null) {
                record = made.get(k).record;
            } else { // make_record failed for this one: never sent
                writer.writeRaw(completion(new Completion(p, seq, txn, -1,
                        new UserRecords.RecordError(made.get(k).error), History.nowMs(), "enqueue")));
                futures.add(null);
                continue;
            }
            if (commitAfterFlush) outstanding.put(p + ":" + seq, new long[] {p, seq});
            Callback cb = (meta, exc) -> {
                boolean inSend = Thread.currentThread() == sending;
                done.add(new Completion(p, seq, txn, meta == null ? -1 : meta.offset(), exc,
                        History.nowMs(), inSend ? "enqueue" : "send"));
            };
            sending = Thread.currentThread();
            try {
                futures.add(producer.send(record, cb));
            } catch (RuntimeException exc) { // every exception is an outcome here
                outstanding.remove(p + ":" + seq);
                writer.writeRaw(completion(new Completion(p, seq, txn, -1, exc, History.nowMs(), "enqueue")));
                futures.add(null);
            } finally {
                sending = null;
            }
        }
        return futures;
    }

    /** Wait for every future ({@code null}: a send that raised); return the failures. */
    List<Throwable> waitAll(List<Future<RecordMetadata>> futures) {
        List<Throwable> failures = new ArrayList<>();
        for (Future<RecordMetadata> f : futures) {
            if (f == null) {
                failures.add(new IllegalStateException("send() raised"));
                continue;
            }
            try {
                f.get(completionTimeoutMs, TimeUnit.MILLISECONDS);
            } catch (Exception exc) { // the outcome is classified by the callback's line
                failures.add(Outcomes.unwrap(exc));
            }
        }
        writeCompletions();
        return failures;
    }

    /** Send everything buffered and write every completion. */
    void flush() {
        try {
            producer.flush();
        } finally {
            writeCompletions();
        }
    }

    void writeCompletions() {
        writer.writeRaw(completionLines());
    }

    /**
     * {@code flush()}, then the application's commit: every record sent and not answered
     * yet is written {@code ok} without an offset and {@code "in_flight":true} (a correct
     * flush() leaves none: it returns once every send is answered).
     */
    void flushAndCommit() {
        try {
            producer.flush();
        } finally {
            StringBuilder b = new StringBuilder(completionLines());
            long t = History.nowMs();
            for (long[] r : outstanding.values()) {
                b.append("{\"type\":\"ok\",\"f\":\"send\",\"ses\":").append(ses).append(",\"p\":")
                        .append(r[0]).append(",\"seq\":").append(r[1])
                        .append(",\"txn\":null,\"offset\":null,\"in_flight\":true,\"t\":").append(t).append("}\n");
            }
            if (!outstanding.isEmpty()) {
                System.out.println("flush() returned with " + outstanding.size()
                        + " sends unanswered; committed them as written");
            }
            committedInFlight.addAll(outstanding.keySet());
            outstanding.clear();
            writer.writeRaw(b);
        }
    }

    private String completionLines() {
        if (done.isEmpty()) return "";
        StringBuilder b = new StringBuilder();
        Completion c;
        while ((c = done.poll()) != null) {
            String k = c.p + ":" + c.seq;
            if (committedInFlight.remove(k)) { // committed after flush(): its outcome is written
                System.out.println("record " + k + " answered after its commit: "
                        + (c.exc == null ? "offset " + c.offset : Outcomes.describe(c.exc)));
                continue;
            }
            outstanding.remove(k);
            b.append(completion(c));
        }
        b.append(producerIdentityLine());
        return b.toString();
    }

    private String completion(Completion c) {
        String type;
        String error = null;
        Long offset = null;
        boolean hasOffset = false;
        if (c.exc == null && acks0) {
            // acks=0: the record left the socket, no broker said it appended it
            type = Outcomes.INFO;
            error = "NoAcknowledgement: acks=0, the broker does not answer";
        } else if (c.exc == null) {
            type = Outcomes.OK;
            hasOffset = true;
            // -1 with acks: DUPLICATE_SEQUENCE_NUMBER, which the client completes as a success:
            // the broker has the record already, at an offset it does not say
            offset = c.offset >= 0 ? c.offset : null;
        } else {
            type = Outcomes.classify(c.exc, c.op);
            error = Outcomes.describe(c.exc);
            hasOffset = type.equals(Outcomes.OK);
        }
        StringBuilder b = new StringBuilder(128);
        b.append("{\"type\":\"").append(type).append("\",\"f\":\"send\",\"ses\":").append(ses)
                .append(",\"p\":").append(c.p).append(",\"seq\":").append(c.seq)
                .append(",\"txn\":").append(c.txn == null ? "null" : c.txn.toString());
        if (hasOffset) b.append(",\"offset\":").append(offset == null ? "null" : offset.toString());
        if (error != null) {
            b.append(",\"error\":");
            Json.string(b, error);
        }
        b.append(",\"t\":").append(c.t).append("}\n");
        return b.toString();
    }

    // --- the producer id and epoch, from the client's own state -------------------------

    private static Field tmField;
    private static Field pidEpochField;
    private static boolean unreachable;

    /** (producer id, epoch) the client runs under, or null (none yet, or not reachable). */
    static long[] producerIdAndEpoch(KafkaProducer<?, ?> producer) {
        if (unreachable || producer == null) return null;
        try {
            if (tmField == null) {
                tmField = KafkaProducer.class.getDeclaredField("transactionManager");
                tmField.setAccessible(true);
            }
            Object tm = tmField.get(producer);
            if (tm == null) return null; // neither idempotent nor transactional
            if (pidEpochField == null) {
                Field f = tm.getClass().getDeclaredField("producerIdAndEpoch");
                f.setAccessible(true);
                pidEpochField = f;
            }
            Object pe = pidEpochField.get(tm);
            if (pe == null) return null;
            long id = pe.getClass().getField("producerId").getLong(pe);
            short epoch = pe.getClass().getField("epoch").getShort(pe);
            return id < 0 ? null : new long[] {id, epoch};
        } catch (ReflectiveOperationException | RuntimeException e) {
            unreachable = true;
            System.out.println("producer id and epoch not reachable in this kafka-clients: " + e);
            return null;
        }
    }

    /** A producer-id line when the (producer id, epoch) is new, else "". */
    String producerIdentityLine() {
        long[] pe = producerIdAndEpoch(producer);
        if (pe == null || (pe[0] == lastProducerId && pe[1] == lastEpoch)) return "";
        lastProducerId = pe[0];
        lastEpoch = (short) pe[1];
        return "{\"type\":\"producer-id\",\"ses\":" + ses + ",\"producer_id\":" + pe[0]
                + ",\"epoch\":" + pe[1] + ",\"t\":" + History.nowMs() + "}\n";
    }
}
