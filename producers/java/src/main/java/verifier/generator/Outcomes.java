package verifier.generator;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The one place that decides what a Java client exception means for an operation: every
 * operation of a history ends {@code ok} (it happened), {@code fail} (it definitely did
 * not) or {@code info} (it may or may not have happened). The Java counterpart of
 * producers/outcomes.py; the table below is printed by {@code --outcome-table} and
 * documented, row for row, in docs/java-generator.md.
 *
 * <p>Rules are tried in order; the first whose operation matches, whose exception class is
 * the thrown one or one of its superclasses (by name, so rows for classes an older
 * kafka-clients lacks simply never match), and whose message fragment (if any) occurs in
 * the message, decides. {@code *} matches anything. An {@link java.util.concurrent.ExecutionException}
 * is unwrapped to its cause first.
 */
final class Outcomes {
    private Outcomes() {}

    static final String OK = "ok";
    static final String FAIL = "fail";
    static final String INFO = "info";

    static final List<String> OPERATIONS = List.of("enqueue", "send", "begin", "commit", "abort", "init");

    static final class Rule {
        final String op;
        final String exception; // simple name in org.apache.kafka.common.errors, a full name, or *
        final String message; // fragment of the message (case-insensitive), or null
        final String outcome;
        final String why;

        Rule(String op, String exception, String message, String outcome, String why) {
            this.op = op;
            this.exception = exception;
            this.message = message;
            this.outcome = outcome;
            this.why = why;
        }

        String className() {
            if (exception.equals("*") || exception.contains(".")) return exception;
            return "org.apache.kafka.common.errors." + exception;
        }
    }

    private static Rule r(String op, String exception, String outcome, String why) {
        return new Rule(op, exception, null, outcome, why);
    }

    private static Rule r(String op, String exception, String message, String outcome, String why) {
        return new Rule(op, exception, message, outcome, why);
    }

    private static final String NOT_WRITTEN = "the broker rejected the batch, or it was never sent";

    /** The table. Order matters: the first match wins (subclasses before their parents). */
    static final List<Rule> TABLE = List.of(
        r("enqueue", "*", FAIL, "send() raised, or its callback ran inside send() (metadata wait, "
                + "buffer full, serialization, producer in an error state): the record never "
                + "entered the accumulator"),
        r("begin", "*", FAIL, "beginTransaction() is local: no request was sent"),
        // --- a send's future / callback --------------------------------------------------
        r("send", "RecordTooLargeException", FAIL, NOT_WRITTEN),
        r("send", "RecordBatchTooLargeException", FAIL, NOT_WRITTEN),
        r("send", "InvalidTopicException", FAIL, NOT_WRITTEN),
        r("send", "AuthorizationException", FAIL, NOT_WRITTEN + " (topic, cluster, transactional id)"),
        r("send", "AuthenticationException", FAIL, "never sent: the connection was not authenticated"),
        r("send", "InvalidRequiredAcksException", FAIL, NOT_WRITTEN),
        r("send", "InvalidTimestampException", FAIL, NOT_WRITTEN),
        r("send", "PolicyViolationException", FAIL, NOT_WRITTEN),
        r("send", "UnsupportedVersionException", FAIL, NOT_WRITTEN),
        r("send", "UnsupportedForMessageFormatException", FAIL, NOT_WRITTEN),
        r("send", "UnsupportedCompressionTypeException", FAIL, NOT_WRITTEN),
        r("send", "org.apache.kafka.common.InvalidRecordException", FAIL, NOT_WRITTEN),
        r("send", "ProducerFencedException", FAIL, "fenced: the broker rejects the old epoch"),
        r("send", "InvalidProducerEpochException", FAIL, "old epoch: rejected by the partition leader"),
        r("send", "UnknownProducerIdException", INFO, "the broker lost the producer's state: an "
                + "earlier attempt may have been appended (kafka-python's table says the same)"),
        r("send", "OutOfOrderSequenceException", FAIL, "the leader rejected the sequence: not appended"),
        r("send", "InvalidTxnStateException", FAIL, NOT_WRITTEN),
        r("send", "TransactionAbortedException", FAIL, "the transaction was aborted before the batch "
                + "was drained: never sent"),
        r("send", "TransactionAbortableException", FAIL, NOT_WRITTEN),
        r("send", "SerializationException", FAIL, "never sent"),
        r("send", "org.apache.kafka.common.config.ConfigException", FAIL, "never sent"),
        r("send", "java.lang.IllegalStateException", FAIL, "the producer refused the record: never sent"),
        r("send", "*", INFO, "anything else, every retriable error included (timeouts, batch expiry, "
                + "disconnects, not leader, not enough replicas): an earlier attempt of the same batch "
                + "may have been appended before its response was lost"),
        // --- commitTransaction() ---------------------------------------------------------
        r("commit", "*", "execute transactional method", FAIL, "the producer was already in an error "
                + "state: no EndTxn was sent"),
        r("commit", "TransactionAbortableException", FAIL, "the coordinator answered "
                + "TRANSACTION_ABORTABLE: not committed"),
        r("commit", "InvalidTxnStateException", FAIL, "the coordinator refused the commit"),
        r("commit", "*", INFO, "timeout, fenced, fatal or interrupted: a commit already prepared "
                + "completes (the fencing init_transactions finishes it); read back before a redo"),
        // --- abortTransaction() ----------------------------------------------------------
        r("abort", "*", INFO, "timeout, fenced or fatal: the new producer's initTransactions "
                + "aborts what is still open"),
        // --- initTransactions() ----------------------------------------------------------
        r("init", "org.apache.kafka.common.config.ConfigException", FAIL, "bad settings: give up"),
        r("init", "AuthorizationException", FAIL, "not allowed: give up"),
        r("init", "UnsupportedVersionException", FAIL, "the broker has no transactions: give up"),
        r("init", "*", INFO, "retried (timeouts, coordinator moving)")
    );

    static Throwable unwrap(Throwable e) {
        while (e instanceof java.util.concurrent.ExecutionException && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    private static boolean isA(Throwable e, String className) {
        if (className.equals("*")) return true;
        for (Class<?> c = e.getClass(); c != null; c = c.getSuperclass()) {
            if (c.getName().equals(className)) return true;
        }
        return false;
    }

    /** The rule deciding operation {@code op} that threw {@code e}. */
    static Rule rule(Throwable e, String op) {
        if (!OPERATIONS.contains(op)) throw new IllegalArgumentException("unknown operation " + op);
        Throwable t = unwrap(e);
        String msg = String.valueOf(t.getMessage()).toLowerCase(Locale.ROOT);
        for (Rule rule : TABLE) {
            if (!rule.op.equals(op) || !isA(t, rule.className())) continue;
            if (rule.message != null && !msg.contains(rule.message.toLowerCase(Locale.ROOT))) continue;
            return rule;
        }
        throw new IllegalStateException("no rule for " + op); // every op ends with a * row
    }

    /** The outcome of {@code op} that threw {@code e} ({@code null}: it returned normally). */
    static String classify(Throwable e, String op) {
        return e == null ? OK : rule(e, op).outcome;
    }

    /** "ExceptionClass: message", the history's error field. */
    static String describe(Throwable e) {
        Throwable t = unwrap(e);
        return t.getClass().getSimpleName() + ": " + t.getMessage();
    }

    /** The table as markdown rows (docs/java-generator.md holds the same rows). */
    static List<String> markdown() {
        List<String> out = new ArrayList<>();
        out.add("| operation | exception (or a superclass) | message contains | outcome | why |");
        out.add("|---|---|---|---|---|");
        for (Rule rule : TABLE) {
            out.add("| " + rule.op + " | `" + rule.exception + "` | "
                    + (rule.message == null ? "" : "`" + rule.message + "`") + " | " + rule.outcome
                    + " | " + rule.why + " |");
        }
        return out;
    }
}
