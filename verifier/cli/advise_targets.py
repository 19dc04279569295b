"""What ``verifier advise`` advises on: properties files as written (their kind read from
their keys), pipeline files read from their code (never run), and the tool's presets."""

from __future__ import annotations

import ast
from pathlib import Path

from verifier.rundata.errors import UsageError

#: Spark Kafka source options (besides kafka.*): a file with one is a source configuration
SPARK_SOURCE_OPTIONS = frozenset({
    "failOnDataLoss", "startingOffsets", "endingOffsets", "subscribe", "subscribePattern",
    "assign", "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "minPartitions",
    "groupIdPrefix", "includeHeaders", "startingTimestamp", "startingOffsetsByTimestamp",
    "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
})
CONSUMER_KEYS = frozenset({
    "isolation.level", "enable.auto.commit", "auto.offset.reset", "group.id",
    "key.deserializer", "value.deserializer", "auto.commit.interval.ms", "max.poll.records",
    "max.poll.interval.ms", "session.timeout.ms", "fetch.min.bytes", "group.instance.id",
    "enable.auto.offset.store", "isolation_level", "enable_auto_commit", "group_id",
})
#: keys only a producer has (the settings its delivery depends on, in each client's
#: names): a file with one of these and a consumer's keys is a consume-transform-produce
#: application's, advised as both (:func:`kinds_of`)
PRODUCER_KEYS = frozenset({
    "acks", "enable.idempotence", "transactional.id", "key.serializer", "value.serializer",
    "linger.ms", "batch.size", "retries", "max.in.flight.requests.per.connection",
    "delivery.timeout.ms", "transaction.timeout.ms", "max.block.ms", "buffer.memory",
    "partitioner.class", "compression.type",
    "request.required.acks", "max.in.flight", "queue.buffering.max.ms",
    "message.send.max.retries", "enable.gapless.guarantee", "message.timeout.ms",
    "enable_idempotence", "transactional_id", "max_in_flight_requests_per_connection",
    "linger_ms", "delivery_timeout_ms", "key_serializer", "value_serializer",
})
#: pipeline presets (streaming.pipelines.presets) -> the sink the rules name
PIPELINE_SINKS = {"kafka-sink": "kafka", "file": "file", "delta": "delta",
                  "foreach-batch": "foreachBatch",
                  "foreach-batch-idempotent": "foreachBatch-idempotent",
                  "dedup-state": "delta",  # stateful, into Delta: Delta's rules
                  # issue 46: foreachBatch into PostgreSQL, an upsert by the record's
                  # place in the log (a replay or a re-read writes nothing twice) and an
                  # append (a replay is appended again)
                  "postgres-upsert": "foreachBatch-upsert",
                  "postgres-append": "foreachBatch"}


def _pipeline_scan(path: Path) -> tuple[list[tuple[str, object]], list[str]]:
    """A pipeline file's sink and Kafka source options, read from its code (never run):
    ``.format("kafka")`` / ``"delta"`` / a file format, ``.foreachBatch(f)`` (keyed by the
    batch id when it writes with ``txnVersion``), ``.option(key, literal)``."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (OSError, SyntaxError) as exc:
        raise UsageError(f"{path}: cannot read the pipeline: {exc}") from None
    formats, options, notes, foreach, txn = [], [], [], False, False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        lits = [a.value for a in node.args if isinstance(a, ast.Constant)]
        if name == "format" and lits:
            formats.append(str(lits[0]))
        elif name == "option" and len(lits) == 2:
            options.append((str(lits[0]), lits[1]))
            txn |= lits[0] == "txnVersion"
        elif name == "foreachBatch":
            foreach = True
        elif name == "option" and lits and lits[0] == "txnVersion":
            txn = True
    sinks = [f for f in formats if f != "kafka"] + (["kafka"] if formats.count("kafka") > 1
                                                    else [])
    if foreach:
        sink = "foreachBatch-idempotent" if txn else "foreachBatch"
    elif "delta" in sinks:
        sink = "delta"
    elif any(f in ("parquet", "json", "csv", "orc", "text") for f in sinks):
        sink = "file"
    elif "kafka" in formats:
        sink = "kafka"
    else:
        raise UsageError(f"{path}: no sink found (writeStream.format(...) or foreachBatch)")
    notes.append(f"sink read from the code: {sink}")
    source = [(k, v) for k, v in options if k.startswith("kafka.") or k in SPARK_SOURCE_OPTIONS]
    return [("sink", sink)] + source, notes


def read_pairs(path: Path, sections: list[str] | None = None) -> list[tuple[str, str]]:
    """The file's pairs as written; INI section headers collected into ``sections``."""
    from producers.properties import parse_properties_text

    try:
        return parse_properties_text(path.read_text(), str(path), sections)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def kinds_of(keys: list[str]) -> list[str]:
    """What a properties file with these keys configures: Spark's Kafka source, a
    consumer, a producer, or a producer and a consumer (one file of an application that
    reads and writes: each is advised on its own)."""
    if any(k.startswith("kafka.") or k in SPARK_SOURCE_OPTIONS for k in keys):
        return ["spark-source"]
    consumer = any(k in CONSUMER_KEYS for k in keys)
    if consumer and any(k in PRODUCER_KEYS for k in keys):
        return ["producer", "consumer"]
    return ["consumer" if consumer else "producer"]


def _file_of(spec: str) -> Path:
    """The file a spec names: ``FILE.py:function`` is FILE.py; ``package.module:function``
    the module's file when it can be found (no code of it runs); else the name as is."""
    target, colon, _ = spec.partition(":")
    if colon and target.endswith(".py"):
        return Path(target)
    if colon and target and all(p.isidentifier() for p in target.split(".")):
        import importlib.util

        try:
            found = importlib.util.find_spec(target)
        except (ImportError, ValueError):
            found = None
        if found is not None and found.origin and found.origin.endswith(".py"):
            return Path(found.origin)
    return Path(spec)


def targets(files: list[str]) -> list[tuple[str, str, list[tuple[str, object]], list[str]]]:
    """(name, kind, pairs as written, notes) for each FILE."""
    from producers.config import DEFAULTS, PRESETS
    from producers.properties import java_name
    from verifier.rundata.vocab import MODES

    out = []
    for name in files:
        path = _file_of(name)
        if not path.exists() and name in MODES:
            # in Java names: every client reads them (librdkafka as aliases of its own)
            pairs = [(java_name(k), v) for k, v in {**DEFAULTS, **PRESETS[name]}.items()
                     if k in ("enable_idempotence", "acks", "retries", "linger_ms",
                              "max_in_flight_requests_per_connection", "delivery_timeout_ms",
                              "request_timeout_ms", "transaction_timeout_ms")]
            if name == "transactional":
                pairs.append(("transactional.id", "<run>.<pid>"))
            out.append((name, "producer", pairs, ["the tool's preset of this delivery mode"]))
        elif not path.exists() and name in PIPELINE_SINKS:
            out.append((name, "pipeline", [("sink", PIPELINE_SINKS[name])],
                        ["the tool's pipeline preset; its source is the tool's "
                         "(read_committed, failOnDataLoss=true)"]))
        elif not path.exists():
            raise UsageError(f"{name}: no such file, delivery mode or pipeline preset")
        elif path.suffix == ".py":
            pairs, notes = _pipeline_scan(path)
            out.append((name, "pipeline", [p for p in pairs if p[0] == "sink"], notes))
            source = [p for p in pairs if p[0] != "sink"]
            if source:
                out.append((f"{name} (source)", "spark-source", source, []))
        else:
            sections: list[str] = []
            pairs = read_pairs(path, sections)
            notes = [f"section headers {', '.join(sections)} skipped: a properties file has "
                     "none (librdkafka reads its global and topic properties as one list)"
                     ] if sections else []
            kinds = kinds_of([k for k, _ in pairs])
            if len(kinds) == 1:
                out.append((name, kinds[0], pairs, notes))
                continue
            for kind, other in (("producer", CONSUMER_KEYS), ("consumer", PRODUCER_KEYS)):
                mine = [(k, v) for k, v in pairs if k not in other]
                left = sorted({k for k, _ in pairs if k in other})
                out.append((f"{name} ({kind})", kind, mine, [
                    *notes, f"the file has a producer's and a consumer's settings (a "
                    f"consume-transform-produce application's): the {kind}'s are advised here, "
                    f"without {', '.join(left)}"]))
    return out
