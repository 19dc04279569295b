"""`verifier advise FILE...`: which guarantee a configuration gives and which fault breaks
it, in seconds, from the advice table (verifier.judge.advice_rules) and the client's own
validation; and the hook that shows it beside a chaos run's verdicts (docs/advise.md)."""

from __future__ import annotations

import argparse
import ast
import json
import sys
from importlib import metadata
from pathlib import Path

from verifier.cli.helptext import HelpFormatter, examples
from verifier.rundata.errors import UsageError

EXIT_OK, EXIT_FINDING, EXIT_INCOMPLETE = 0, 1, 2

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
#: pipeline presets (streaming.pipelines.presets) -> the sink the rules name
PIPELINE_SINKS = {"kafka-sink": "kafka", "file": "file", "delta": "delta",
                  "foreach-batch": "foreachBatch",
                  "foreach-batch-idempotent": "foreachBatch-idempotent",
                  "dedup-state": "delta"}  # stateful, into Delta: Delta's rules


def register(sub: argparse._SubParsersAction) -> None:
    from producers.clients import CLIENTS, DEFAULT_CLIENT

    p = sub.add_parser(
        "advise", help="which guarantee a producer, consumer, Spark source or pipeline "
                       "configuration gives, and what each fault can do to it (seconds, no "
                       "cluster)",
        description="Advice on a configuration from the advice table (docs/advise.md) and "
                    "the client's own validation. FILE: a properties file (Java, librdkafka or "
                    "kafka-python keys; producer, consumer or Spark source options), a "
                    "pipeline FILE.py, or a preset name (a delivery mode, a pipeline preset).",
        epilog="exit codes: 0 advice given, nothing to report; 1 a configuration the client "
               "refuses, one the client silently weakens, or a client check that disagrees "
               "with the table; 2 a client check could not run; 64 usage error\n\n"
               + examples(
                   ("verifier advise my-producer.properties", "kafka-python settings (the "
                    "default client): the guarantee, per fault"),
                   ("verifier advise app.properties --client java", "the same for Kafka's "
                    "Java producer"),
                   ("verifier advise idempotent transactional kafka-sink", "the tool's "
                    "presets: delivery modes, a pipeline")),
        formatter_class=HelpFormatter)
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--client", choices=CLIENTS, default=DEFAULT_CLIENT,
                   help="the producer client the configuration is for")
    p.add_argument("--client-version", default=None, metavar="VERSION",
                   help="its version (default: the version installed here; the client's own "
                        "check runs only on that one)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_advise)


def installed_version(client: str) -> str:
    """The client version installed here (Spark: PySpark's, read without importing it)."""
    if client == "spark":
        try:
            return metadata.version("pyspark")
        except metadata.PackageNotFoundError:
            return "unknown"
    from producers.clients import client_version

    return client_version(client)


# ---- reading what to advise on ----------------------------------------------------------

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


def _properties(path: Path) -> list[tuple[str, str]]:
    from producers.properties import parse_properties_text

    try:
        return parse_properties_text(path.read_text(), str(path))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def kind_of(keys: list[str]) -> str:
    if any(k.startswith("kafka.") or k in SPARK_SOURCE_OPTIONS for k in keys):
        return "spark-source"
    if any(k in CONSUMER_KEYS for k in keys):
        return "consumer"
    return "producer"


def targets(files: list[str]) -> list[tuple[str, str, list[tuple[str, object]], list[str]]]:
    """(name, kind, pairs as written, notes) for each FILE."""
    from producers.config import DEFAULTS, PRESETS
    from verifier.rundata.vocab import MODES

    out = []
    for name in files:
        path = Path(name)
        if not path.exists() and name in MODES:
            pairs = [(k, v) for k, v in {**DEFAULTS, **PRESETS[name]}.items()
                     if k in ("enable_idempotence", "acks", "retries", "linger_ms",
                              "max_in_flight_requests_per_connection", "delivery_timeout_ms",
                              "request_timeout_ms", "transaction_timeout_ms")]
            if name == "transactional":
                pairs.append(("transactional_id", "<run>.<pid>"))
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
            pairs = _properties(path)
            out.append((name, kind_of([k for k, _ in pairs]), pairs, []))
    return out


# ---- advising ---------------------------------------------------------------------------

def advise_one(name: str, kind: str, pairs: list, client: str, version: str,
               run_check: bool = True) -> dict:
    """The advice on one configuration, with the client's own check where it can run
    (producers on the installed client version)."""
    try:
        advice = _advice(name, kind, pairs, client, version)
    except ValueError as exc:
        raise UsageError(f"{name}: {exc}") from None
    entry = {"file": name, "advice": advice.to_json(), "notes": [], "findings": [],
             "check": None}
    if kind == "producer" and run_check and version == installed_version(client):
        entry["check"] = _client_check(client, version, pairs).to_json()
        entry["findings"] = _findings(entry["check"], entry["advice"])
    elif kind == "producer" and run_check:
        entry["notes"].append(f"the client's own check runs on the installed {client} "
                              f"{installed_version(client)} only")
    return entry


_RULE_KEYS = {"acks", "enable.idempotence", "retries", "max.in.flight.requests.per.connection",
              "delivery.timeout.ms", "linger.ms", "request.timeout.ms", "transactional.id",
              "transaction.timeout.ms", "isolation.level", "enable.auto.commit",
              "auto.offset.reset", "group.id", "failOnDataLoss", "startingOffsets"}


def _client_check(client: str, version: str, pairs: list):
    from producers import checkconfig
    from verifier.judge.advice import canonical

    if client == "librdkafka":
        return checkconfig.librdkafka([(k, str(v)) for k, v in pairs], version)
    java_pairs = [(canonical(k), _java_value(v)) for k, v in pairs]
    if client == "java":
        return checkconfig.java(java_pairs, version)
    return checkconfig.kafka_python(java_pairs, version)


def _java_value(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return "all" if v == -1 else "none" if v is None else str(v)


def _findings(check: dict, advice: dict) -> list[str]:
    """Where the client's own check and the table disagree (either may be wrong)."""
    out = []
    if check["ok"] is False and not advice["refused"]:
        out.append(f"the client refuses what the table accepts: {check['error']}")
    if check["ok"] is True and advice["refused"]:
        out.append("the table refuses what the client accepts: "
                   + "; ".join(r["reason"] for r in advice["refused"]))
    if check["ok"] is True:
        for key, value in check["effective"].items():
            if key in advice["effective"] and advice["effective"][key] != value:
                out.append(f"{key}: the client runs {_java_value(value)}, the table says "
                           f"{_java_value(advice['effective'][key])}")
    return out


def exit_code(entries: list[dict]) -> int:
    if any(e["findings"] or e["advice"]["refused"] or (e["check"] or {}).get("ok") is False
           or any(x["id"].startswith("silent-downgrade") for x in e["advice"]["effects"])
           for e in entries):
        return EXIT_FINDING
    if any((e["check"] or {}).get("ok", True) is None for e in entries):
        return EXIT_INCOMPLETE
    return EXIT_OK


def cmd_advise(args: argparse.Namespace) -> int:
    from verifier.report.advice import render_advice

    version = args.client_version or installed_version(args.client)
    entries = []
    for name, kind, pairs, notes in targets(args.files):
        entry = advise_one(name, kind, pairs, args.client, version)
        entry["notes"] = notes + entry["notes"]
        entries.append(entry)
    code = exit_code(entries)
    if args.format == "json":
        print(json.dumps({"format": "advice", "version": 1, "exit_code": code,
                          "configurations": entries}, indent=1, default=str))
    else:
        print("\n\n".join(render_advice(e) for e in entries))
    return code


# ---- the chaos hook ---------------------------------------------------------------------

def chaos_with_advice(args: argparse.Namespace, prepared: tuple, run, out=None) -> int:
    """``verifier chaos`` with the advice: printed for the configurations of the run's
    columns before it starts (in full for the user's file), then every cell's observed
    anomaly kinds compared with it. The comparison goes into each run's document
    (``advice_check``), the matrix outputs are written again with it (report.html shows
    it) and the disagreements are printed. The exit code is the run's."""
    from verifier.report.advice import render_advice, render_comparison

    out = out or sys.stdout
    opts, scenarios = prepared[3], prepared[1]
    columns = column_configs(opts, scenarios)
    print("=== the advice for this run's configurations (verifier advise)", file=out)
    for key, (name, kind, pairs, client) in columns.items():
        entry = advise_one(name, kind, pairs, client.split(":")[0],
                           installed_version(client), run_check=key == "user-0")
        if key == "user-0":
            print(render_advice(entry), file=out)
        else:
            print(f"{name}: {entry['advice']['guarantee']}", file=out)
    out.flush()
    code = run(args, *prepared)
    if getattr(args, "known_bug_plans", None):
        # each run forces a documented bug: the advice foresees no bug's anomalies, and
        # the known-bugs grid already judges each against the bug's documented status
        print("=== verdicts against the advice: not compared (the known-bugs profile forces "
              "documented bugs; the grid above judges them)", file=out, flush=True)
        return code
    rows = check_outputs(Path(opts.out), columns)
    if rows:
        print(render_comparison(rows), file=out, flush=True)
    return code


def column_configs(opts, scenarios) -> dict[str, tuple[str, str, list, str]]:
    """Each column's configuration, keyed as :func:`check_outputs` finds the column (its
    generator's pid, or a pipeline's mode): (name, kind, pairs, client)."""
    from producers.clients import client_slug, column_suffix
    from verifier.rundata.vocab import COPIER

    clients = tuple(opts.clients or (opts.client,))
    modes = dict.fromkeys(m for s in scenarios for m in s.workload.modes)
    out = {}
    for c in clients:  # c may name a version (java:3.9.1): the advice is for that one
        slug = client_slug(column_suffix(c, clients))
        for m in modes:
            # the copier's producer is the transactional preset (producers.copier)
            (_, kind, pairs, _), = targets(["transactional" if m == COPIER else m])
            out[f"{m}-{slug}-0" if len(clients) > 1 else f"{m}-0"] = (m, kind, pairs, c)
    if opts.user_config is not None:
        out["user-0"] = (f"user:{Path(opts.user_config).name}", "producer",
                         _properties(Path(opts.user_config)), clients[0])
    for p in opts.pipelines:
        name, kind, pairs, _ = targets([p.spec])[0]
        out[f"pipeline:{p.name}"] = (p.name, kind, pairs, "spark")
    return out


def _column_key(column: dict) -> str:
    pids = column.get("pids") or []
    return "user-0" if "user-0" in pids else pids[0] if pids else str(column.get("mode"))


def check_outputs(out: Path, columns: dict) -> list[dict]:
    """Compare every cell of the matrix (or matrices, one per Kafka version) under
    ``out`` with its column's advice; write the matrices again with the comparison."""
    from verifier.judge.advice import compare
    from verifier.report.matrix import write_matrix
    from verifier.rundata.layout import RunLayout

    rows: list[dict] = []
    cache: dict[tuple, object] = {}
    for path in [out / "verdict.json", *sorted(out.glob("kafka-*/verdict.json"))]:
        try:
            matrix = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if matrix.get("format") != "chaos-matrix":
            continue
        for doc in matrix.get("runs", []):
            faults = _run_faults(doc, RunLayout)
            doc["advice_check"] = []
            for col in doc.get("columns", []):
                key = _column_key(col)
                if key not in columns:
                    continue
                isos = col.get("isolations") or []
                iso = isos[0] if len(isos) == 1 else "read_committed"
                if (key, iso) not in cache:
                    name, kind, pairs, client = columns[key]
                    extra = [("isolation.level", iso)] if kind == "producer" else []
                    cache[(key, iso)] = _advice(name, kind, list(pairs) + extra,
                                                client.split(":")[0], installed_version(client))
                row = compare(cache[(key, iso)], col, faults)
                doc["advice_check"].append({**row, "scenario": doc.get("scenario", "?")})
            rows += doc["advice_check"]
        meta = {k: v for k, v in matrix.items()
                if k not in ("format", "version", "grid", "runs", "workloads", "exit_code")}
        write_matrix(matrix["runs"], path.parent, meta)
    return rows


def _advice(name: str, kind: str, pairs: list, client: str, version: str | None = None):
    """The table's advice (pure) for a configuration as written: the keys the rules read,
    every Spark source option (kafka.*: Spark's own refusals), a pipeline's sink."""
    from verifier.judge.advice import Config, advise, canonical, normalize

    settings = normalize([(k, v) for k, v in pairs if canonical(k) in _RULE_KEYS
                          or k.startswith("kafka.") or k == "sink"])
    if kind in ("spark-source", "pipeline"):
        client, version = "spark", installed_version("spark")
    return advise(Config(kind, client, version or installed_version(client), settings, name))


def _run_faults(doc: dict, layout) -> set[str]:
    """The fault classes a run's scenario ran (its plan's scenario, minus skipped kinds)."""
    from verifier.judge.advice import fault_classes

    try:
        plan = json.loads(layout(Path(doc["run_dir"])).config.read_text())
        faults = plan.get("scenario_spec", {}).get("faults", [])
    except (KeyError, OSError, ValueError, TypeError):
        faults = []
    return fault_classes(faults)
