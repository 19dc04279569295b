"""The advice table: what a client configuration gives under each fault class, as data
(DESIGN §10 "Advice"; docs/advise.md prints it with its sources).

One table, :data:`RULES`, read top to bottom by :mod:`verifier.judge.advice`. Each row
applies to some clients at some client versions when all its conditions hold, and does
one of four things, named by its ``stage``:

- ``default``: fills in the client's default for every key the configuration leaves out;
- ``effect``: the client changes a setting itself (idempotence turned off silently);
- ``refused``: the client refuses the configuration (its own message in ``reason``);
- a fault class (or ``no fault``): what can happen then, as the anomaly kinds of the
  expectation table (empty: the row says why nothing can), with the scenario that
  demonstrates it.

Conditions are ``(key, op, value)`` on the effective configuration; keys are Java
property names (each client's own names are aliased to them for that client only,
:data:`CLIENT_ALIASES`),
plus ``kind`` (producer, consumer, spark-source, pipeline) and ``sink`` for pipelines.
``explicit``/``unset`` look at what the user wrote, not at the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verifier.rundata.vocab import (
    ABORTED_READ,
    DUP_CROSS,
    DUP_DELIVERY,
    DUP_SAME,
    HANGING,
    LOST,
    REORDER,
    TORN,
)

LOST_ACK, BROKER_CRASH, PRODUCER_CRASH = "lost ack", "broker crash", "producer crash"
DRIVER_CRASH, EXECUTOR_LOSS, NETWORK_CUT = "driver crash", "executor loss", "network cut"
CHECKPOINT_LOSS, NO_FAULT = "checkpoint loss", "no fault"
#: the fault classes the advice answers for, in report order
FAULTS = (NO_FAULT, LOST_ACK, BROKER_CRASH, PRODUCER_CRASH, DRIVER_CRASH, EXECUTOR_LOSS,
          NETWORK_CUT, CHECKPOINT_LOSS)
DEFAULT, EFFECT, REFUSED = "default", "effect", "refused"

#: a scenario fault kind -> its fault class (process-kill: by its target, see advice.py)
FAULT_OF_KIND = {
    "ack-loss": LOST_ACK, "broker-kill": BROKER_CRASH, "broker-pause": BROKER_CRASH,
    "producer-kill": PRODUCER_CRASH, "observer-kill": DRIVER_CRASH,
    "network-partition": NETWORK_CUT, "hold": NETWORK_CUT, "checkpoint-lost": CHECKPOINT_LOSS,
    "executor-kill": EXECUTOR_LOSS, "worker-kill": EXECUTOR_LOSS,
}

#: the project's scenario that demonstrates each fault class (None: no scenario yet)
SCENARIO = {
    NO_FAULT: "baseline", LOST_ACK: "ack-loss", BROKER_CRASH: "broker-kill",
    PRODUCER_CRASH: "producer-kill", DRIVER_CRASH: "pipeline-restart",
    EXECUTOR_LOSS: "executor-loss",  # needs --spark-cluster standalone (issue 34)
    NETWORK_CUT: "network-partition", CHECKPOINT_LOSS: "checkpoint-lost",
}

MAX_INT = 2**31 - 1

#: each client's own names -> the Java property name the rules use. A name is read as the
#: client whose name it is reads it, and by no other (issue 49): ``message.timeout.ms`` is
#: librdkafka's name for the delivery timeout, and the Java producer given it ignores it,
#: so reading it for Java or kafka-python judged a setting they never run. Java names are
#: every client's: the Java producer's own, the tool's format for kafka-python (its
#: generator maps them), and librdkafka's aliases of its own names.
CLIENT_ALIASES: dict[str, dict[str, str]] = {
    "java": {},
    "kafka-python": {
        "enable_idempotence": "enable.idempotence", "acks": "acks", "retries": "retries",
        "max_in_flight_requests_per_connection": "max.in.flight.requests.per.connection",
        "delivery_timeout_ms": "delivery.timeout.ms", "linger_ms": "linger.ms",
        "request_timeout_ms": "request.timeout.ms", "transactional_id": "transactional.id",
        "transaction_timeout_ms": "transaction.timeout.ms",
        "isolation_level": "isolation.level", "enable_auto_commit": "enable.auto.commit",
        "auto_offset_reset": "auto.offset.reset", "group_id": "group.id",
    },
    "librdkafka": {
        "request.required.acks": "acks", "message.send.max.retries": "retries",
        "max.in.flight": "max.in.flight.requests.per.connection",
        "message.timeout.ms": "delivery.timeout.ms", "queue.buffering.max.ms": "linger.ms",
    },
    "spark": {},
}
#: every client's names at once: a configuration read without its client
ALIASES: dict[str, str] = {k: v for names in CLIENT_ALIASES.values() for k, v in names.items()}


def aliases(client: str | None) -> dict[str, str]:
    """The names ``client`` reads (None: every client's)."""
    return ALIASES if client is None else CLIENT_ALIASES.get(client, {})


# sources, cited by title (a report stands on its own)
JAVA_DOCS = "Apache Kafka documentation, producer configs"
KIP_679 = "KIP-679: Producer will enable the strongest delivery guarantee by default (Kafka 3.0)"
KAFKA_13598 = ("KAFKA-13598: idempotence not enabled by default unless set explicitly "
               "(fixed in 3.0.1, 3.1.1, 3.2.0); Kafka 3.0 upgrade notes")
JAVA_VALIDATION = "kafka-clients ProducerConfig.postProcessAndValidateIdempotenceConfigs"
KIP_98 = "KIP-98: Exactly Once Delivery and Transactional Messaging"
KIP_91 = "KIP-91: Provide Intuitive User Timeouts in The Producer (delivery.timeout.ms)"
KIP_890 = "KIP-890: Transactions Server-Side Defense (KAFKA-14402, KAFKA-17754)"
KP_DOCS = "kafka-python KafkaProducer documentation (3.0: KIP-679 defaults)"
KP_220 = "kafka-python 2.2.0 release notes (idempotent producer, retries -> infinite)"
RD_CONF = "librdkafka CONFIGURATION.md"
RD_EOS = "librdkafka INTRODUCTION.md, Idempotent Producer"
SPARK_KAFKA = "Spark Structured Streaming + Kafka Integration Guide"
SPARK_SS = "Spark Structured Streaming Programming Guide, fault-tolerance semantics"
DELTA = "Delta Lake documentation, idempotent writes in foreachBatch (txnAppId, txnVersion)"
PROJECT = "docs/expectations.md of this project (observed in its runs)"


@dataclass(frozen=True)
class Rule:
    """One row of the advice table."""

    id: str
    stage: str  # default, effect, refused, or a fault class
    when: tuple[tuple, ...] = ()
    kinds: tuple[str, ...] = ()  # a fault row: what can happen (empty: nothing)
    reason: str = ""
    source: str = ""
    clients: tuple[str, ...] = ("java", "kafka-python", "librdkafka", "spark")
    since: str | None = None  # client versions [since, until)
    until: str | None = None
    sets: dict = field(default_factory=dict)  # default / effect rows: the values set
    #: a hazard that is a known bug of some broker or client versions: predicted, but not
    #: held against the configuration's guarantee
    bug: bool = False


JAVA, KP, RD, SPARK = ("java",), ("kafka-python",), ("librdkafka",), ("spark",)
CLIENTS = ("java", "kafka-python", "librdkafka")
P = ("kind", "==", "producer")
IDEM, NO_IDEM = ("enable.idempotence", "==", True), ("enable.idempotence", "==", False)
RETRIES, NO_RETRIES = ("retries", ">", 0), ("retries", "==", 0)
TXN, NO_TXN = ("transactional.id", "set", None), ("transactional.id", "unset", None)
ACKS_ALL, ACKS_NOT_ALL = ("acks", "==", "all"), ("acks", "!=", "all")
IN_FLIGHT = ("max.in.flight.requests.per.connection", ">", 1)
READERS = ("kind", "in", ("producer", "consumer", "spark-source"))
RU = ("isolation.level", "==", "read_uncommitted")
RC = ("isolation.level", "==", "read_committed")
SOURCE = ("kind", "in", ("consumer", "spark-source"))
SINK = "sink"

_J = dict(clients=JAVA)
_RETRY_REASON = ("a request whose response was lost is retried and the broker appends it "
                 "again: without idempotence nothing tells the broker it is a retry")
#: a transaction that fails without its producer dying (a send that expired, a commit that
#: timed out) is aborted and tried again by the same producer, as Kafka's own example does
#: (the generators redo it with the same records): read_uncommitted then holds two copies
#: of one session (issue 50: late-produce on 3.5.2, 4.1.1, 4.4.0; late-end-txn on 3.5.2)
_REDO_REASON = ("a transaction whose request timed out or failed is aborted and tried "
                "again by the same producer: read_uncommitted delivers the aborted copy and "
                "the committed one (read_committed only the committed one)")
_REDO_SOURCE = (KIP_98 + "; kafka-clients KafkaProducer javadoc (\"abort the transaction "
                "and try again\"); " + PROJECT)

RULES: tuple[Rule, ...] = (
    # ---- defaults, per client and version ------------------------------------------------
    Rule("java-defaults-2.x", DEFAULT, (P,), until="3.0.0", source=JAVA_DOCS, **_J,
         sets={"acks": "1", "enable.idempotence": False, "retries": MAX_INT,
               "max.in.flight.requests.per.connection": 5, "delivery.timeout.ms": 120000,
               "linger.ms": 0, "request.timeout.ms": 30000}),
    Rule("java-defaults-3.x", DEFAULT, (P,), since="3.0.0", until="4.0.0", source=KIP_679, **_J,
         sets={"acks": "all", "enable.idempotence": True, "retries": MAX_INT,
               "max.in.flight.requests.per.connection": 5, "delivery.timeout.ms": 120000,
               "linger.ms": 0, "request.timeout.ms": 30000}),
    Rule("java-defaults-4.x", DEFAULT, (P,), since="4.0.0", source=JAVA_DOCS + " (4.0: "
         "linger.ms 5, KIP-1030)", **_J,
         sets={"acks": "all", "enable.idempotence": True, "retries": MAX_INT,
               "max.in.flight.requests.per.connection": 5, "delivery.timeout.ms": 120000,
               "linger.ms": 5, "request.timeout.ms": 30000}),
    Rule("kafka-python-defaults-2.x", DEFAULT, (P,), until="2.2.0", clients=KP,
         source="kafka-python 2.0 KafkaProducer documentation",
         sets={"acks": "1", "enable.idempotence": False, "retries": 0,
               "max.in.flight.requests.per.connection": 5, "linger.ms": 0,
               "request.timeout.ms": 30000}),
    Rule("kafka-python-defaults-2.2", DEFAULT, (P,), since="2.2.0", until="3.0.0", clients=KP,
         source=KP_220,
         sets={"acks": "1", "enable.idempotence": False, "retries": MAX_INT,
               "max.in.flight.requests.per.connection": 5, "delivery.timeout.ms": 120000,
               "linger.ms": 0, "request.timeout.ms": 30000}),
    Rule("kafka-python-defaults-3.x", DEFAULT, (P,), since="3.0.0", clients=KP, source=KP_DOCS,
         sets={"acks": "all", "enable.idempotence": True, "retries": MAX_INT,
               "max.in.flight.requests.per.connection": 5, "delivery.timeout.ms": 120000,
               "linger.ms": 0, "request.timeout.ms": 30000}),
    Rule("librdkafka-defaults", DEFAULT, (P,), since="1.0.0", clients=RD, source=RD_CONF,
         sets={"acks": "all", "enable.idempotence": False, "retries": MAX_INT,
               "max.in.flight.requests.per.connection": 1000000,
               "delivery.timeout.ms": 300000, "linger.ms": 5, "request.timeout.ms": 30000}),
    Rule("java-consumer-defaults", DEFAULT, (("kind", "==", "consumer"),), clients=JAVA + KP,
         source="Apache Kafka documentation, consumer configs",
         sets={"isolation.level": "read_uncommitted", "enable.auto.commit": True,
               "auto.offset.reset": "latest"}),
    Rule("librdkafka-consumer-defaults", DEFAULT, (("kind", "==", "consumer"),), clients=RD,
         source=RD_CONF, sets={"isolation.level": "read_committed",
                               "enable.auto.commit": True, "auto.offset.reset": "latest"}),
    Rule("spark-source-defaults", DEFAULT, (("kind", "==", "spark-source"),), clients=SPARK,
         source=SPARK_KAFKA + " (kafka.* options go to the consumer: isolation.level "
         "read_uncommitted)",
         sets={"isolation.level": "read_uncommitted", "failOnDataLoss": True,
               "startingOffsets": "latest"}),
    Rule("reader-default", DEFAULT, (P,), source="advice: a producer's records are judged "
         "as a read_committed reader sees them unless isolation.level says otherwise",
         sets={"isolation.level": "read_committed"}),
    # ---- what the clients change themselves -------------------------------------------
    Rule("txn-implies-idempotence", EFFECT, (P, TXN, ("enable.idempotence", "unset", None)),
         sets={"enable.idempotence": True}, clients=CLIENTS,
         reason="a transactional.id turns idempotence on when it is not set", source=KIP_98),
    Rule("kafka-13598", EFFECT, (P, ("enable.idempotence", "unset", None), NO_TXN),
         sets={"enable.idempotence": False}, since="3.0.0", until="3.0.1", **_J,
         reason="idempotence stays off unless set explicitly (KAFKA-13598)", source=KAFKA_13598),
    Rule("kafka-13598-3.1", EFFECT, (P, ("enable.idempotence", "unset", None), NO_TXN),
         sets={"enable.idempotence": False}, since="3.1.0", until="3.1.1", **_J,
         reason="idempotence stays off unless set explicitly (KAFKA-13598)", source=KAFKA_13598),
    Rule("silent-downgrade-acks", EFFECT, (P, ("enable.idempotence", "unset", None), NO_TXN,
                                           ACKS_NOT_ALL),
         sets={"enable.idempotence": False}, since="3.0.0", clients=JAVA + KP,
         reason="idempotence (the default) is turned off silently: acks is not all",
         source=JAVA_VALIDATION + "; " + KP_DOCS),
    Rule("silent-downgrade-retries", EFFECT, (P, ("enable.idempotence", "unset", None), NO_TXN,
                                              NO_RETRIES),
         sets={"enable.idempotence": False}, since="3.0.0", clients=JAVA + KP,
         reason="idempotence (the default) is turned off silently: retries=0",
         source=JAVA_VALIDATION + "; " + KP_DOCS),
    Rule("silent-downgrade-in-flight", EFFECT,
         (P, ("enable.idempotence", "unset", None), NO_TXN,
          ("max.in.flight.requests.per.connection", ">", 5)),
         sets={"enable.idempotence": False}, since="3.0.0", until="4.0.0", clients=JAVA + KP,
         reason="idempotence (the default) is turned off silently: more than 5 requests in "
                "flight (Kafka 3.x warns that 4.0 refuses it)",
         source=JAVA_VALIDATION + "; " + KP_DOCS),
    Rule("librdkafka-idempotence-in-flight", EFFECT,
         (P, IDEM, ("max.in.flight.requests.per.connection", "unset", None)),
         sets={"max.in.flight.requests.per.connection": 5}, clients=RD, source=RD_EOS,
         reason="idempotence lowers the default of 1,000,000 requests in flight to 5"),
    # ---- what the clients refuse (their own messages) -------------------------------------
    Rule("txn-without-idempotence", REFUSED, (P, TXN, ("enable.idempotence", "explicit", False)),
         clients=CLIENTS, source=KIP_98 + "; " + JAVA_VALIDATION,
         reason="Cannot set a transactional.id without also enabling idempotence"),
    Rule("idempotence-acks", REFUSED, (P, IDEM, ACKS_NOT_ALL, ("acks", "explicit", None)),
         clients=CLIENTS, source=JAVA_VALIDATION + "; " + RD_EOS,
         reason="Must set acks to all in order to use the idempotent producer"),
    Rule("idempotence-retries", REFUSED, (P, IDEM, NO_RETRIES, ("retries", "explicit", None)),
         clients=CLIENTS, source=JAVA_VALIDATION + "; " + RD_EOS,
         reason="Must set retries to non-zero when using the idempotent producer"),
    Rule("idempotence-in-flight", REFUSED,
         (P, IDEM, ("max.in.flight.requests.per.connection", ">", 5),
          ("max.in.flight.requests.per.connection", "explicit", None),
          ("enable.idempotence", "explicit", None)), clients=CLIENTS,
         source=JAVA_VALIDATION + "; " + RD_EOS,
         reason="To use the idempotent producer, max.in.flight.requests.per.connection must "
                "be set to at most 5"),
    Rule("idempotence-in-flight-4.x", REFUSED,
         (P, IDEM, ("max.in.flight.requests.per.connection", ">", 5)), since="4.0.0", **_J,
         source=JAVA_VALIDATION + " (4.0 made the 3.x warning an error)",
         reason="To use the idempotent producer, max.in.flight.requests.per.connection must "
                "be set to at most 5"),
    Rule("delivery-timeout", REFUSED,
         (P, ("delivery.timeout.ms", "<", "linger.ms+request.timeout.ms")),
         clients=JAVA + KP, source=KIP_91,
         reason="delivery.timeout.ms should be equal to or larger than linger.ms + "
                "request.timeout.ms"),
    Rule("spark-option-unsupported", REFUSED,
         (("kind", "==", "spark-source"), ("kafka.group.id|kafka.auto.offset.reset|"
          "kafka.enable.auto.commit|kafka.key.deserializer|kafka.value.deserializer|"
          "kafka.interceptor.classes", "any-set", None)), clients=SPARK, source=SPARK_KAFKA,
         reason="Kafka option is not supported by the Kafka source (Spark names the option; "
                "kafka.group.id is allowed since Spark 3.0 but the source commits nothing "
                "to it)"),
    # ---- no fault ------------------------------------------------------------------------
    Rule("ru-aborted", NO_FAULT, (READERS, TXN, RU), (ABORTED_READ, TORN),
         reason="read_uncommitted delivers the records of aborted and still open "
                "transactions", source=KIP_98 + "; " + SPARK_KAFKA),
    Rule("ru-source", NO_FAULT, (SOURCE, RU), (ABORTED_READ, TORN),
         reason="read_uncommitted (the default of the Java consumer and of Spark's source) "
                "delivers aborted and open transactions' records of transactional producers",
         source=SPARK_KAFKA + "; Apache Kafka documentation, consumer configs"),
    Rule("rc-producer", NO_FAULT, (P, RC, TXN), (),
         reason="read_committed delivers committed transactions only, up to the last "
                "stable offset", source=KIP_98),
    Rule("rc-source", NO_FAULT, (SOURCE, RC), (),
         reason="read_committed delivers committed transactions only, up to the last "
                "stable offset", source=KIP_98 + "; " + SPARK_KAFKA),
    # ---- lost ack ------------------------------------------------------------------------
    Rule("lost-ack-retry-dup", LOST_ACK, (P, NO_IDEM, RETRIES), (DUP_SAME,),
         reason=_RETRY_REASON, source=JAVA_DOCS + " (enable.idempotence, retries)"),
    Rule("lost-ack-reorder", LOST_ACK, (P, NO_IDEM, IN_FLIGHT), (REORDER,),
         reason="with more than one request in flight and no sequence numbers, a later "
                "batch can land before an earlier one that failed or was retried",
         source=JAVA_DOCS + " (max.in.flight.requests.per.connection); " + PROJECT),
    Rule("lost-ack-acks0", LOST_ACK, (P, ("acks", "==", "0")), (LOST,),
         reason="acks=0 counts a record sent once it is in the socket buffer: a closed "
                "connection loses it", source=JAVA_DOCS + " (acks)"),
    Rule("lost-ack-idempotent", LOST_ACK, (P, IDEM), (),
         reason="the broker recognises a retried batch by its producer id and sequence "
                "number and does not append it twice", source=KIP_98),
    # ---- broker crash ------------------------------------------------------------------
    Rule("broker-crash-acks1", BROKER_CRASH, (P, ("acks", "in", ("0", "1"))), (LOST,),
         reason="acks=1 (or 0) acknowledges before the followers have the record: a leader "
                "that dies first takes it along", source=JAVA_DOCS + " (acks)"),
    Rule("broker-crash-acks-all", BROKER_CRASH, (P, ACKS_ALL), (),
         reason="acks=all acknowledges once every in-sync replica has the record (with "
                "min.insync.replicas >= 2 a single crash loses nothing acknowledged)",
         source=JAVA_DOCS + " (acks, min.insync.replicas)"),
    Rule("broker-crash-retry-dup", BROKER_CRASH, (P, NO_IDEM, RETRIES), (DUP_SAME,),
         reason="requests in flight to the dying leader time out and are retried to the new "
                "one: " + _RETRY_REASON, source=JAVA_DOCS + " (retries)"),
    Rule("broker-crash-reorder", BROKER_CRASH, (P, NO_IDEM, IN_FLIGHT), (REORDER,),
         reason="failed and retried batches overtake each other without sequence numbers",
         source=JAVA_DOCS + " (max.in.flight.requests.per.connection)"),
    Rule("broker-crash-idempotent", BROKER_CRASH, (P, IDEM), (),
         reason="the new leader has the producer state and refuses a retried batch's "
                "duplicate", source=KIP_98),
    # ---- producer crash ----------------------------------------------------------------
    Rule("producer-crash-resend", PRODUCER_CRASH, (P, NO_TXN, RETRIES), (DUP_CROSS,),
         reason="a restarted producer is a new session: idempotence does not span sessions, "
                "so re-sending what was not acknowledged writes a second copy of what was",
         source=KIP_98 + " (the producer id is per session without a transactional.id)"),
    Rule("producer-crash-txn", PRODUCER_CRASH, (P, TXN, RC), (),
         reason="the new session's initTransactions fences the old one and aborts its open "
                "transaction: read_committed readers see each committed record once",
         source=KIP_98),
    Rule("producer-crash-txn-ru", PRODUCER_CRASH, (READERS, TXN, RU), (DUP_CROSS, ABORTED_READ),
         reason="the aborted transaction's records are visible at read_uncommitted, and its "
                "re-run writes them again", source=KIP_98),
    # ---- network cut -------------------------------------------------------------------
    Rule("network-cut-acks1", NETWORK_CUT, (P, ("acks", "in", ("0", "1"))), (LOST,),
         reason="a leader cut off from the others keeps acknowledging acks=1 writes until "
                "it is fenced; the new leader truncates them", source=JAVA_DOCS + " (acks)"),
    Rule("network-cut-retry-dup", NETWORK_CUT, (P, NO_IDEM, RETRIES), (DUP_SAME,),
         reason="requests time out during the cut and are retried: " + _RETRY_REASON,
         source=JAVA_DOCS + " (retries)"),
    Rule("network-cut-reorder", NETWORK_CUT, (P, NO_IDEM, IN_FLIGHT), (REORDER,),
         reason="timed-out and retried batches overtake each other without sequence numbers",
         source=JAVA_DOCS + " (max.in.flight.requests.per.connection)"),
    Rule("network-cut-idempotent", NETWORK_CUT, (P, IDEM, ACKS_ALL), (),
         reason="acks=all and sequence numbers: retries across the cut neither lose nor "
                "duplicate", source=KIP_98),
    Rule("network-cut-late-txn", NETWORK_CUT, (P, TXN), (HANGING, ABORTED_READ, TORN),
         reason="a transactional request delayed past its transaction's end can start a "
                "hanging transaction (brokers before 3.6) or end the next transaction early "
                "(without transaction version 2); scenarios late-produce, late-end-txn",
         source=KIP_890, bug=True),
    # ---- a transaction redone after a failure, read at read_uncommitted ------------------
    *(Rule(f"{slug}-txn-redo-ru", fault, (P, TXN, RU), (DUP_SAME, ABORTED_READ),
           reason=_REDO_REASON, source=_REDO_SOURCE)
      for slug, fault in (("lost-ack", LOST_ACK), ("broker-crash", BROKER_CRASH),
                          ("network-cut", NETWORK_CUT))),
    # ---- pipelines (Spark) -------------------------------------------------------------
    Rule("kafka-sink-replay", DRIVER_CRASH, ((SINK, "==", "kafka"),), (DUP_DELIVERY,),
         reason="the Kafka sink is at-least-once: a batch replayed after a restart is "
                "written again", source=SPARK_KAFKA + " (writing data to Kafka)"),
    Rule("foreach-batch-replay", DRIVER_CRASH, ((SINK, "==", "foreachBatch"),), (DUP_DELIVERY,),
         reason="foreachBatch is at-least-once unless the writer uses the batch id: a "
                "replayed batch is written again", source=SPARK_SS + " (foreachBatch)"),
    Rule("exactly-once-sink", DRIVER_CRASH,
         ((SINK, "in", ("file", "delta", "foreachBatch-idempotent")),), (),
         reason="the sink records which batch it wrote (the file sink's _spark_metadata, "
                "Delta's transaction log, txnAppId/txnVersion): a replayed batch is skipped",
         source=SPARK_SS + "; " + DELTA),
    Rule("upsert-sink", DRIVER_CRASH, ((SINK, "==", "foreachBatch-upsert"),), (),
         reason="each row is upserted by the record's place in the log (INSERT ... ON "
                "CONFLICT DO NOTHING): a replayed batch, or a new checkpoint's re-read, "
                "writes no row twice", source=SPARK_SS + " (foreachBatch)"),
    Rule("kafka-sink-task-retry", EXECUTOR_LOSS, ((SINK, "==", "kafka"),), (DUP_DELIVERY,),
         reason="a retried task sends again what the lost one already sent",
         source=SPARK_KAFKA + " (writing data to Kafka)"),
    Rule("file-sink-task-retry", EXECUTOR_LOSS,
         ((SINK, "in", ("file", "delta", "foreachBatch", "foreachBatch-idempotent",
                        "foreachBatch-upsert")),), (),
         reason="a task's output is committed by the driver only once: a retried task's "
                "files replace the lost one's", source=SPARK_SS),
    Rule("checkpoint-own-progress", CHECKPOINT_LOSS,
         ((SINK, "in", ("file", "foreachBatch-idempotent")),), (LOST,),
         reason="a new checkpoint restarts the batch ids at 0 while the sink remembers the "
                "old ones: it skips the new batches it believes written",
         source=SPARK_SS + " (recovery semantics after changes)"),
    Rule("checkpoint-rewrite", CHECKPOINT_LOSS,
         ((SINK, "in", ("kafka", "foreachBatch", "delta")),), (DUP_DELIVERY,),
         reason="a new checkpoint reads the input again from startingOffsets and writes it "
                "again", source=SPARK_SS + " (recovery semantics after changes)"),
    Rule("fail-on-data-loss-off", BROKER_CRASH, (("failOnDataLoss", "==", False),), (LOST,),
         reason="failOnDataLoss=false skips offsets that are gone (retention, a truncated "
                "log) instead of stopping the query", source=SPARK_KAFKA + " (failOnDataLoss)"),
    Rule("consumer-auto-commit", DRIVER_CRASH,
         (("kind", "==", "consumer"), ("enable.auto.commit", "==", True)), (LOST, DUP_DELIVERY),
         reason="auto-commit commits offsets on a timer, not after processing: a crash "
                "skips what was committed but not processed and repeats what was processed "
                "but not committed", source="Apache Kafka documentation, consumer configs "
                "(enable.auto.commit)"),
)
