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
    private final boolean acks0;
    private final long completionTimeoutMs;
    private final ConcurrentLinkedQueue<Completion> done = new ConcurrentLinkedQueue<>();
    /** the thread inside send(): a callback on it means send() failed before enqueueing */
    private volatile Thread sending;
    private long lastProducerId = Long.MIN_VALUE;
    private short lastEpoch = Short.MIN_VALUE;

    Emitter(KafkaProducer<byte[], byte[]> producer, History.Writer writer, Main.Spec spec, int ses) {
        this.producer = producer;
        this.writer = writer;
        this.topic = spec.topic;
        this.run = spec.runId;
        this.pid = spec.pid;
        this.ses = ses;
        this.recordSize = spec.recordSize();
        this.acks0 = "0".equals(spec.settings.get("acks"));
        // a send's future always completes by delivery.timeout.ms (batch expiry); the margin
        // covers the request in flight when the batch expires
        this.completionTimeoutMs = spec.ms("delivery.timeout.ms") + spec.ms("request.timeout.ms");
    }

    /** The record value, byte for byte what verifier/rundata/records.py:encode_value makes. */
    static byte[] encodeValue(String run, String pid, int ses, int p, long seq, Long txn, boolean abort,
                              long ts, int size) {
        StringBuilder b = new StringBuilder(Math.max(size, 128));
        b.append("{\"v\":1,\"run\":");
        Json.string(b, run);
        b.append(",\"pid\":");
        Json.string(b, pid);
        b.append(",\"ses\":").append(ses).append(",\"p\":").append(p).append(",\"seq\":").append(seq)
                .append(",\"txn\":").append(txn == null ? "null" : txn.toString())
                .append(",\"abort\":").append(abort).append(",\"ts\":").append(ts).append('}');
        byte[] raw = b.toString().getBytes(StandardCharsets.UTF_8);
        if (size <= raw.length) return raw;
        int pad = Math.max(0, size - raw.length - 9);
        byte[] out = new byte[raw.length + 9 + pad];
        System.arraycopy(raw, 0, out, 0, raw.length - 1);
        int k = raw.length - 1;
        for (byte c : ",\"pad\":\"".getBytes(StandardCharsets.US_ASCII)) out[k++] = c;
        for (int j = 0; j < pad; j++) out[k++] = 'x';
        out[k++] = '"';
        out[k] = '}';
        return out;
    }

    /** Send records (pid, p, seq) for each {p, seq}; one write announces them all. Returns
     *  their futures ({@code null} where send() raised; its fail line is then written). */
    List<Future<RecordMetadata>> sendMany(List<long[]> idents, Long txn, boolean abort) {
        long ts = History.nowMs();
        StringBuilder lines = new StringBuilder(completionLines());
        List<byte[]> values = new ArrayList<>(idents.size());
        for (long[] id : idents) {
            values.add(encodeValue(run, pid, ses, (int) id[0], id[1], txn, abort, ts, recordSize));
            lines.append("{\"type\":\"invoke\",\"f\":\"send\",\"ses\":").append(ses)
                    .append(",\"p\":").append(id[0]).append(",\"seq\":").append(id[1])
                    .append(",\"txn\":").append(txn == null ? "null" : txn.toString())
                    .append(",\"t\":").append(ts).append("}\n");
        }
        writer.writeRaw(lines);
        List<Future<RecordMetadata>> futures = new ArrayList<>(idents.size());
        for (int k = 0; k < idents.size(); k++) {
            int p = (int) idents.get(k)[0];
            long seq = idents.get(k)[1];
            byte[] key = (pid + ":" + p + ":" + seq).getBytes(StandardCharsets.UTF_8);
            Callback cb = (meta, exc) -> {
                boolean inSend = Thread.currentThread() == sending;
                done.add(new Completion(p, seq, txn, meta == null ? -1 : meta.offset(), exc,
                        History.nowMs(), inSend ? "enqueue" : "send"));
            };
            sending = Thread.currentThread();
            try {
                futures.add(producer.send(new ProducerRecord<>(topic, p, key, values.get(k)), cb));
            } catch (RuntimeException exc) { // every exception is an outcome here
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

    private String completionLines() {
        if (done.isEmpty()) return "";
        StringBuilder b = new StringBuilder();
        Completion c;
        while ((c = done.poll()) != null) b.append(completion(c));
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
