package verifier.generator;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * A pipeline file's records (issue 46), made by Python: this generator's plan entry
 * {@code user_input.<pid>} names a declared topic, whose record (p, seq) is the file's
 * {@code make_record(topic, seq * partitions + p)} with its identity in the
 * {@code verifier.id} header (and in the value's {@code ID_FIELD}). Java cannot call the
 * user's Python, so a child process serves the records: {@code python -m
 * producers.user_records serve --plan RUN/config.json --pid P}, asked for each chunk on
 * its stdin and answering on its stdout in the frames of producers/record_server.py (each
 * frame its body's length, then the body; big-endian). The child ends when this process
 * closes its stdin or dies; its stderr is this generator's log.
 */
final class UserRecords {
    /** One record as the server made it, or why it could not. */
    static final class Made {
        final ProducerRecord<byte[], byte[]> record;
        final String error;

        Made(ProducerRecord<byte[], byte[]> record, String error) {
            this.record = record;
            this.error = error;
        }
    }

    /** make_record failed for one record: a send that failed before it left. */
    static final class RecordError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RecordError(String message) {
            super(message);
        }
    }

    private final Process server;
    private final DataOutputStream out;
    private final DataInputStream in;
    private final List<String> command;

    private UserRecords(Process server, List<String> command) {
        this.server = server;
        this.command = command;
        this.out = new DataOutputStream(new BufferedOutputStream(server.getOutputStream(), 1 << 16));
        this.in = new DataInputStream(new BufferedInputStream(server.getInputStream(), 1 << 16));
    }

    /** The server of {@code spec}'s records, started (it loads the pipeline file meanwhile). */
    static UserRecords start(Main.Spec spec) {
        List<String> cmd = List.of(spec.python, "-m", "producers.user_records", "serve",
                "--plan", spec.plan.toString(), "--pid", spec.pid);
        try {
            Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            return new UserRecords(p, cmd);
        } catch (IOException e) {
            throw new Main.CannotRun("cannot start the record server " + cmd + ": " + e.getMessage());
        }
    }

    /** Records {p, seq} of {@code idents} for {@code topic}, each carrying its identity. */
    List<Made> make(String topic, List<long[]> idents, List<byte[]> identities) {
        try {
            out.write(request(idents, identities));
            out.flush();
            int n = in.readInt();
            byte[] body = new byte[n];
            in.readFully(body);
            return response(topic, idents, body);
        } catch (IOException e) {
            String state = server.isAlive() ? "running" : "exited " + server.exitValue();
            throw new Main.CannotRun("the record server (" + String.join(" ", command) + ", " + state
                    + ") did not answer: " + e + "; its stderr is above");
        }
    }

    /** A framed request: count, then per record p (i32), seq (i64), identity (u32 length, bytes). */
    static byte[] request(List<long[]> idents, List<byte[]> identities) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream(64 + idents.size() * 96);
        DataOutputStream b = new DataOutputStream(buf);
        try {
            b.writeInt(0); // the body's length, filled below
            b.writeInt(idents.size());
            for (int k = 0; k < idents.size(); k++) {
                byte[] id = identities.get(k);
                b.writeInt((int) idents.get(k)[0]);
                b.writeLong(idents.get(k)[1]);
                b.writeInt(id.length);
                b.write(id);
            }
        } catch (IOException e) {
            throw new IllegalStateException(e); // a byte array does not fail
        }
        byte[] frame = buf.toByteArray();
        int n = frame.length - 4;
        frame[0] = (byte) (n >>> 24);
        frame[1] = (byte) (n >>> 16);
        frame[2] = (byte) (n >>> 8);
        frame[3] = (byte) n;
        return frame;
    }

    /** A response body: per record a status, then the record or the server's message. */
    static List<Made> response(String topic, List<long[]> idents, byte[] body) throws IOException {
        DataInputStream r = new DataInputStream(new ByteArrayInputStream(body));
        List<Made> out = new ArrayList<>(idents.size());
        for (long[] id : idents) {
            int status = r.readUnsignedByte();
            if (status == 1) {
                out.add(new Made(null, new String(bytes(r, r.readInt()), java.nio.charset.StandardCharsets.UTF_8)));
                continue;
            }
            if (status != 0) throw new IOException("unknown status " + status);
            byte[] key = optional(r);
            byte[] value = optional(r);
            long ts = r.readLong();
            RecordHeaders headers = new RecordHeaders();
            for (int h = r.readUnsignedShort(); h > 0; h--) {
                String name = new String(bytes(r, r.readUnsignedShort()), java.nio.charset.StandardCharsets.UTF_8);
                headers.add(new RecordHeader(name, bytes(r, r.readInt())));
            }
            out.add(new Made(new ProducerRecord<>(topic, (int) id[0], ts < 0 ? null : ts, key, value, headers), null));
        }
        if (r.available() != 0) throw new IOException(r.available() + " bytes left after the last record");
        return out;
    }

    /**
     * {@code --print-user-records PYTHON PLAN PID}: lines {@code p<TAB>seq<TAB>identity} on
     * stdin, asked three at a time; one line per record on stdout, {@code p, seq, timestamp,
     * key, value} (hex, {@code -} for none) and its headers ({@code name=hex,...}), or
     * {@code ERROR<TAB>message}. No broker: the unit tier compares them with Python's.
     */
    static int print(String python, String plan, String pid) throws IOException {
        Main.Spec spec = new Main.Spec();
        spec.python = python;
        spec.plan = java.nio.file.Path.of(plan);
        spec.pid = pid;
        UserRecords server = start(spec);
        java.io.BufferedReader stdin = new java.io.BufferedReader(
                new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8));
        List<String> lines = new ArrayList<>();
        for (String line; (line = stdin.readLine()) != null; ) if (!line.isBlank()) lines.add(line);
        for (int i = 0; i < lines.size(); i += 3) {
            List<long[]> idents = new ArrayList<>();
            List<byte[]> ids = new ArrayList<>();
            for (String line : lines.subList(i, Math.min(i + 3, lines.size()))) {
                String[] f = line.split("\t", 3);
                idents.add(new long[] {Long.parseLong(f[0]), Long.parseLong(f[1])});
                ids.add(f[2].getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
            for (Made m : server.make("t", idents, ids)) {
                if (m.error != null) {
                    System.out.println("ERROR\t" + m.error.replace('\n', ' '));
                    continue;
                }
                StringBuilder b = new StringBuilder().append(m.record.partition()).append('\t')
                        .append(m.record.timestamp() == null ? "-" : m.record.timestamp().toString())
                        .append('\t').append(hex(m.record.key())).append('\t').append(hex(m.record.value())).append('\t');
                String sep = "";
                for (org.apache.kafka.common.header.Header h : m.record.headers()) {
                    b.append(sep).append(h.key()).append('=').append(hex(h.value()));
                    sep = ",";
                }
                System.out.println(b);
            }
        }
        server.out.close();
        return Main.EXIT_OK;
    }

    private static String hex(byte[] b) {
        if (b == null) return "-";
        StringBuilder s = new StringBuilder(b.length * 2);
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    private static byte[] optional(DataInputStream r) throws IOException {
        int n = r.readInt();
        return n == -1 ? null : bytes(r, n);
    }

    private static byte[] bytes(DataInputStream r, int n) throws IOException {
        if (n < 0) throw new IOException("a field of length " + n);
        byte[] b = new byte[n];
        r.readFully(b);
        return b;
    }
}
