package verifier.generator;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The producer history (docs/formats.md §2, history format 1), as the Python writer and
 * reader in verifier/rundata/history.py and producers/resume.py do it: one JSON line per
 * event, appended with one write on an O_APPEND file (FileOutputStream in append mode), so
 * each line reaches the OS before the next send; a torn last line is ignored when read and
 * cut off before a new session appends.
 */
final class History {
    static final String FORMAT = "producer-history";
    static final long VERSION = 1;

    private History() {}

    static long nowMs() {
        return System.currentTimeMillis();
    }

    static final class Parsed {
        Map<String, Object> header;
        final List<Map<String, Object>> events = new ArrayList<>();
        boolean tornTail;
    }

    static Parsed read(Path path) throws IOException {
        byte[] data = Files.readAllBytes(path);
        String text = new String(data, StandardCharsets.UTF_8);
        String[] lines = text.split("\n", -1);
        int n = lines.length;
        boolean completeTail = lines[n - 1].isEmpty();
        if (completeTail) n--;
        Parsed out = new Parsed();
        List<Map<String, Object>> parsed = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            Map<String, Object> obj;
            try {
                obj = Json.parseObject(lines[k]);
            } catch (Json.ParseError e) {
                if (k == n - 1) {
                    out.tornTail = true;
                    break;
                }
                throw new Main.UsageError(path + ": line " + (k + 1) + " is not a JSON object ("
                        + e.getMessage() + "); only the last line of a history may be torn");
            }
            if (k == n - 1 && !completeTail) {
                out.tornTail = true;
                break;
            }
            parsed.add(obj);
        }
        if (parsed.isEmpty()) throw new Main.UsageError(path + ": empty history (no header line)");
        out.header = parsed.get(0);
        if (!"header".equals(out.header.get("type")) || !FORMAT.equals(out.header.get("format"))) {
            throw new Main.UsageError(path + ": not a producer history (first line "
                    + Json.write(out.header) + ")");
        }
        Object v = out.header.get("version");
        if (!(v instanceof Number) || ((Number) v).longValue() != VERSION) {
            throw new Main.UsageError(path + ": producer-history version " + v
                    + ", this generator knows version " + VERSION);
        }
        out.events.addAll(parsed.subList(1, parsed.size()));
        return out;
    }

    /** Appends events to one producer's history (a single writer thread). */
    static final class Writer implements AutoCloseable {
        private final FileOutputStream out;

        Writer(Path path, Map<String, Object> header) throws IOException {
            Files.createDirectories(path.getParent());
            boolean exists = Files.exists(path) && Files.size(path) > 0;
            if (exists) checkExisting(path, header);
            out = new FileOutputStream(path.toFile(), true);
            if (!exists) {
                Map<String, Object> h = new LinkedHashMap<>();
                h.put("type", "header");
                h.put("format", FORMAT);
                h.put("version", VERSION);
                h.putAll(header);
                write(h);
            }
        }

        private static void checkExisting(Path path, Map<String, Object> header) throws IOException {
            Parsed existing = read(path);
            for (String key : new String[] {"run", "pid", "mode", "topic"}) {
                if (header.containsKey(key)
                        && !String.valueOf(header.get(key)).equals(String.valueOf(existing.header.get(key)))) {
                    throw new Main.UsageError(path + " belongs to " + key + "="
                            + existing.header.get(key) + ", not " + header.get(key)
                            + ": use a new --run-dir or --pid");
                }
            }
            if (existing.tornTail) {
                byte[] data = Files.readAllBytes(path);
                int keep = 0;
                for (int k = data.length - 1; k >= 0; k--) {
                    if (data[k] == '\n') {
                        keep = k + 1;
                        break;
                    }
                }
                try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
                    f.setLength(keep);
                }
            }
        }

        void write(Map<String, Object> event) {
            if (!event.containsKey("t")) event.put("t", nowMs());
            StringBuilder b = new StringBuilder(128);
            Json.write(b, event);
            b.append('\n');
            writeRaw(b);
        }

        void writeRaw(CharSequence lines) {
            if (lines.length() == 0) return;
            try {
                out.write(lines.toString().getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new IllegalStateException("cannot append to the history: " + e, e);
            }
        }

        @Override
        public void close() throws IOException {
            out.close();
        }
    }

    // --- what a restarted generator learns (producers/resume.py) --------------------------

    /** A transaction's identity: number, abort intent, records (p, seq), read-back probe. */
    static final class PlannedTxn {
        final long txn;
        final boolean abort;
        final List<int[]> recs; // {p, seq}; seq fits an int for any run this tool makes
        final List<long[]> probe; // {p, offset}

        PlannedTxn(long txn, boolean abort, List<int[]> recs, List<long[]> probe) {
            this.txn = txn;
            this.abort = abort;
            this.recs = recs;
            this.probe = probe;
        }
    }

    static final class Resume {
        int session = 1;
        final Map<Integer, Long> nextSeq = new LinkedHashMap<>();
        long nextTxn;
        final List<long[]> unacked = new ArrayList<>(); // {p, seq}
        final List<PlannedTxn> uncommitted = new ArrayList<>();
    }

    private static List<Object> list(Object v) {
        if (v instanceof List) {
            @SuppressWarnings("unchecked")
            List<Object> l = (List<Object>) v;
            return l;
        }
        return List.of();
    }

    /** The same summary as producers/resume.py:resume_state. */
    static Resume resume(Parsed history) {
        Resume state = new Resume();
        if (history == null) return state;
        int maxSes = 0;
        Set<List<Long>> invoked = new LinkedHashSet<>();
        Set<List<Long>> acked = new java.util.HashSet<>();
        Map<Long, PlannedTxn> begun = new LinkedHashMap<>();
        Set<Long> committed = new java.util.HashSet<>();
        Map<Long, Long> commitOpen = new java.util.HashMap<>();
        Map<List<Long>, Map<Long, Long>> offsets = new java.util.HashMap<>(); // (ses, txn) -> p -> off
        for (Map<String, Object> e : history.events) {
            Object kind = e.get("type");
            Object f = e.get("f");
            if ("session".equals(kind)) {
                maxSes = Math.max(maxSes, Json.asInt(e.get("ses")));
            } else if ("send".equals(f)) {
                List<Long> id = List.of(Json.asLong(e.get("p")), Json.asLong(e.get("seq")));
                if ("invoke".equals(kind)) {
                    invoked.add(id);
                } else if ("ok".equals(kind)) {
                    acked.add(id);
                    if (e.get("txn") != null && e.get("offset") != null) {
                        offsets.computeIfAbsent(List.of(Json.asLong(e.get("ses")), Json.asLong(e.get("txn"))),
                                x -> new LinkedHashMap<>()).putIfAbsent(id.get(0), Json.asLong(e.get("offset")));
                    }
                }
            } else if ("begin".equals(f) && "invoke".equals(kind)) {
                long txn = Json.asLong(e.get("txn"));
                commitOpen.remove(txn);
                offsets.remove(List.of(Json.asLong(e.get("ses")), txn));
                List<int[]> recs = new ArrayList<>();
                for (Object r : list(e.get("recs"))) {
                    List<Object> pr = list(r);
                    recs.add(new int[] {Json.asInt(pr.get(0)), Json.asInt(pr.get(1))});
                }
                begun.putIfAbsent(txn, new PlannedTxn(txn, Boolean.TRUE.equals(e.get("abort")), recs, List.of()));
            } else if ("commit".equals(f)) {
                long txn = Json.asLong(e.get("txn"));
                if ("ok".equals(kind)) {
                    committed.add(txn);
                } else if ("invoke".equals(kind) || "info".equals(kind)) {
                    commitOpen.put(txn, Json.asLong(e.get("ses")));
                } else {
                    commitOpen.remove(txn);
                }
            }
        }
        state.session = maxSes + 1;
        List<List<Long>> planned = new ArrayList<>(invoked);
        for (PlannedTxn t : begun.values()) {
            for (int[] r : t.recs) planned.add(List.of((long) r[0], (long) r[1]));
        }
        for (List<Long> r : planned) {
            int p = r.get(0).intValue();
            state.nextSeq.merge(p, r.get(1) + 1, Math::max);
        }
        long maxTxn = -1;
        for (long t : begun.keySet()) maxTxn = Math.max(maxTxn, t);
        state.nextTxn = maxTxn + 1;
        for (List<Long> r : invoked) {
            if (!acked.contains(r)) state.unacked.add(new long[] {r.get(0), r.get(1)});
        }
        for (PlannedTxn t : begun.values()) {
            if (committed.contains(t.txn) || t.abort) continue;
            List<long[]> probe = new ArrayList<>();
            if (commitOpen.containsKey(t.txn)) {
                Map<Long, Long> offs = offsets.getOrDefault(List.of(commitOpen.get(t.txn), t.txn), Map.of());
                new java.util.TreeMap<>(offs).forEach((p, off) -> probe.add(new long[] {p, off}));
            }
            state.uncommitted.add(new PlannedTxn(t.txn, false, t.recs, probe));
        }
        return state;
    }
}
