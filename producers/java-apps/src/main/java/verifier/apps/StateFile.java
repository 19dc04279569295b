package verifier.apps;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.kafka.common.TopicPartition;

/**
 * What the instance says it is doing, as JSON replaced whole after every step (the same
 * fields as producers/app_copier.py's): {@code at_risk} is the number of records between a
 * batch's two steps, which a kill now would lose, write again or abort (the exposure of an
 * instance kill, verifier/harness/faults/kinds/application.py).
 */
final class StateFile {
    private final Path path;
    private final String instance;
    private final String strategy;
    private final long pid = ProcessHandle.current().pid();
    private List<String> assigned = new ArrayList<>();
    private long rebalances;
    private boolean inTransaction;
    private long atRisk;
    private long written;
    private long batches;
    /** where in the batch the instance is: "" between batches, "processing" (the sleep
     * between the two steps), "writing" or "committing" (the second step under way) */
    private String step = "";
    /** the latest errors that made the copier start over ({type, message, t}, JSON): a
     * zombie's refused commit (the instance-pause fault reads them) */
    private final List<String> errors = new ArrayList<>();
    static final int KEEP_ERRORS = 10;
    /** a share copier's (KIP-932): the group's delivery-count limit, and the records it got
     * at their last attempt ("topic-partition@offset"), which a kill leaves archived */
    private int deliveryLimit;
    private final List<String> lastAttempts = new ArrayList<>();
    static final int KEEP_LAST_ATTEMPTS = 100_000;

    StateFile(String path, String instance, String strategy) {
        this.path = path == null ? null : Path.of(path);
        this.instance = instance;
        this.strategy = strategy;
    }

    /** The partitions of {@code owned} not in {@code gone}, as the state file names them
     * ("topic-partition"): an instance's whole assignment after a rebalance callback, which
     * under incremental rebalancing names only what was added or taken away. */
    static List<String> names(Collection<TopicPartition> owned, Collection<TopicPartition> gone) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : owned) {
            if (!gone.contains(tp)) {
                out.add(tp.topic() + "-" + tp.partition());
            }
        }
        return out;
    }

    synchronized long atRisk() {
        return atRisk;
    }

    /** The partitions the instance owns now; the file replaced only when they changed (a
     * share copier says, every batch, the partitions it came from). */
    synchronized void assigned(Collection<String> partitions) {
        List<String> now = new ArrayList<>(partitions);
        now.sort(null);
        if (!now.equals(assigned)) {
            assigned = now;
            write();
        }
    }

    /** A rebalance took partitions away; {@code kept}: what the instance still owns. */
    synchronized void revoked(Collection<String> kept) {
        assigned = new ArrayList<>(kept);
        assigned.sort(null);
        write();
    }

    /**
     * A rebalance the instance took part in has ended, {@code owned} its whole assignment
     * now: counted here, not at a revocation. Under incremental rebalancing (cooperative,
     * the consumer protocol of KIP-848) a member only gaining partitions is told nothing
     * else, and counted none when the count was a revocation's; an eager rebalance calls
     * both, and counts once.
     */
    synchronized void rebalanced(Collection<String> owned) {
        assigned = new ArrayList<>(owned);
        assigned.sort(null);
        rebalances++;
        write();
    }

    /** {@code n} records are now between the batch's two steps. */
    synchronized void atRisk(long n, boolean transaction) {
        atRisk(n, transaction, n > 0 ? "processing" : "");
    }

    /** {@code n} records are now between the batch's two steps, the batch in {@code step}
     * (a copier without processing time opens its window in its second step). */
    synchronized void atRisk(long n, boolean transaction, String step) {
        atRisk = n;
        inTransaction = transaction;
        this.step = step;
        write();
    }

    /** The batch's second step has begun: a kill now may or may not undo it. */
    synchronized void step(String name) {
        step = name;
        write();
    }

    /** One more record handed to the producer. The window's opening (the first record) is
     * on disk at once, for the at-risk trigger; the count after it within
     * {@link #FLUSH_MS} by a background writer (a count written only when the window
     * opened said 1 where 2264 were; a file replaced at every record made the Streams
     * presets 15 times slower than a bare topology, docs/benchmarks.md 2026-11-29). */
    synchronized void oneMore(boolean transaction) {
        atRisk++;
        inTransaction = transaction;
        if (atRisk == 1) {
            write();
        } else {
            dirty = true;
            if (flusher == null) {
                flusher = new Thread(this::flushLoop, "state-file-flusher");
                flusher.setDaemon(true);
                flusher.start();
            }
        }
    }

    /** How far behind the count on disk may be while records are handed over. */
    static final long FLUSH_MS = 5;
    private boolean dirty;
    private Thread flusher;

    private void flushLoop() {
        while (true) {
            try {
                Thread.sleep(FLUSH_MS);
            } catch (InterruptedException e) {
                return;
            }
            synchronized (this) {
                if (dirty) {
                    write();
                }
            }
        }
    }

    /** The batch's second step is done: its records are safe. */
    synchronized void done() {
        finish();
        write();
    }

    /** As {@link #done()}, said on disk with the next write (the next batch's window, a
     * rebalance, an error) or at {@link #flush()}: until then the file still says the
     * second step, which no trigger acts in and no exposure counts. Each write replaces
     * the file whole (create and rename over it), 0.25-0.7 ms on ext4 here, which flushes
     * a file renamed over another: three a batch kept the Java commit-before copier at
     * 0.56 of its bare loop (docs/benchmarks.md, 2026-11-30). */
    synchronized void doneLater() {
        finish();
        dirty = true;
    }

    /** Write what {@link #doneLater()} left unsaid, if anything. */
    synchronized void flush() {
        if (dirty) {
            write();
        }
    }

    private void finish() {
        written += atRisk;
        if (atRisk > 0) {
            batches++;
        }
        atRisk = 0;
        inTransaction = false;
        step = "";
    }

    /** An aborted transaction: its records are not written. */
    synchronized void aborted() {
        atRisk = 0;
        inTransaction = false;
        step = "";
        write();
    }

    synchronized void deliveryLimit(int limit) {
        deliveryLimit = limit;
        write();
    }

    /** Records received at their last delivery attempt, on disk before they are at risk. */
    synchronized void lastAttempts(List<String> records) {
        for (String r : records) {
            if (lastAttempts.size() < KEEP_LAST_ATTEMPTS) {
                lastAttempts.add(r);
            }
        }
        write();
    }

    /** An error that ends this run of the loop (the copier starts over). */
    synchronized void error(Throwable e) {
        errors.add("{\"type\": " + Json.str(e.getClass().getSimpleName())
            + ", \"message\": " + Json.str(String.valueOf(e.getMessage()))
            + ", \"t\": " + System.currentTimeMillis() / 1000.0
            + ", \"batches\": " + batches + "}");
        while (errors.size() > KEEP_ERRORS) {
            errors.remove(0);
        }
        write();
    }

    synchronized void write() {
        dirty = false;
        if (path == null) {
            return;
        }
        StringBuilder b = new StringBuilder("{\"instance\": ").append(Json.str(instance))
            .append(", \"pid\": ").append(pid)
            .append(", \"strategy\": ").append(Json.str(strategy))
            .append(", \"assigned\": [");
        for (int i = 0; i < assigned.size(); i++) {
            b.append(i == 0 ? "" : ", ").append(Json.str(assigned.get(i)));
        }
        b.append("], \"rebalances\": ").append(rebalances)
            .append(", \"in_transaction\": ").append(inTransaction)
            .append(", \"at_risk\": ").append(atRisk)
            .append(", \"written\": ").append(written)
            .append(", \"batches\": ").append(batches)
            .append(", \"step\": ").append(Json.str(step))
            .append(", \"errors\": [").append(String.join(", ", errors)).append("]");
        if (deliveryLimit > 0) {
            b.append(", \"delivery_limit\": ").append(deliveryLimit)
                .append(", \"last_attempts\": [");
            for (int i = 0; i < lastAttempts.size(); i++) {
                b.append(i == 0 ? "" : ", ").append(Json.str(lastAttempts.get(i)));
            }
            b.append("]");
        }
        b
            .append(", \"t\": ").append(System.currentTimeMillis() / 1000.0)
            .append("}\n");
        Path tmp = path.resolveSibling("." + path.getFileName() + "." + pid);
        try {
            Files.writeString(tmp, b.toString(), StandardCharsets.UTF_8);
            Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            System.err.println("state file " + path + ": " + e);
        }
    }
}
