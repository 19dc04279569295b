"""`verifier advise FILE...`: which guarantee a configuration gives and which fault breaks
it, in seconds, from the advice table (verifier.judge.advice_rules) and the client's own
validation; and the hook that shows it beside a chaos run's verdicts (docs/advise.md)."""

from __future__ import annotations

import argparse
import json
import sys
from importlib import metadata
from pathlib import Path

from verifier.cli.advise_targets import read_pairs, targets
from verifier.cli.helptext import HelpFormatter, examples
from verifier.rundata.columns import pipeline_column
from verifier.rundata.errors import UsageError
from verifier.rundata.vocab import EXIT_ANOMALY as EXIT_FINDING  # advise's 1: a finding
from verifier.rundata.vocab import EXIT_INCOMPLETE, EXIT_OK


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
    p.add_argument("--client", choices=CLIENTS, default=None,
                   help=f"the producer client the configuration is for (default "
                        f"{DEFAULT_CLIENT}; the advice says which client a file's keys "
                        "suggest)")
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


# ---- advising ---------------------------------------------------------------------------

def advise_one(name: str, kind: str, pairs: list, client: str, version: str,
               run_check: bool = True, client_given: bool = True) -> dict:
    """The advice on one configuration, with the client's own check where it can run
    (producers on the installed client version). The file is read in ``client``'s own
    names; a key the client does not read is named with its word (and refuses the file
    where the client refuses it), an inline comment is explained, and a refused file gets
    no guarantee."""
    from producers.properties import inline_comment

    comments = [w for k, v in pairs if isinstance(v, str) and (w := inline_comment(k, v))]
    try:
        advice = _advice(name, kind, pairs, client, version)
    except ValueError as exc:
        raise UsageError(f"{name}: {exc}" + "".join(f"; {w}" for w in comments)) from None
    entry = {"file": name, "advice": advice.to_json(), "notes": comments, "findings": [],
             "check": None}
    if kind == "producer":
        entry["notes"][:0] = [_client_line(pairs, client, client_given)]
        _unknown_keys(entry, pairs, client)
    if kind == "producer" and run_check and version == installed_version(client):
        entry["check"] = _client_check(client, version, pairs).to_json()
        entry["findings"] = _findings(entry["check"], entry["advice"])
    elif kind == "producer" and run_check:
        entry["notes"].append(f"the client's own check runs on the installed {client} "
                              f"{installed_version(client)} only")
    if entry["advice"]["refused"] or (entry["check"] or {}).get("ok") is False:
        # what the client refuses to run gives no guarantee, whatever its settings say
        entry["advice"]["guarantee"] = f"none: {client} refuses this configuration"
        entry["advice"]["mode"] = None
    return entry


def _client_line(pairs: list, client: str, given: bool) -> str:
    """Which client the file is judged on, and which client its keys suggest."""
    from producers.checkconfig import suggested_client

    line = f"judged on {client}" + ("" if given else " (no --client given: the default)")
    suggested = suggested_client([k for k, _ in pairs])
    if suggested and suggested[0] != client:
        other, keys = suggested
        hint = f": --client {other}" if other in ("java", "kafka-python", "librdkafka") else ""
        line += f"; its keys suggest {other} ({', '.join(keys)}){hint}"
    return line


def _unknown_keys(entry: dict, pairs: list, client: str) -> None:
    """The keys ``client`` does not read, named with its own word: a refusal where the
    client refuses the file for them, else a note (the Java producer ignores them)."""
    from producers.checkconfig import refuses_unknown, unknown_keys, unknown_line

    unknown = unknown_keys([k for k, _ in pairs], client)
    if not unknown:
        return
    line = unknown_line(unknown, client)
    if refuses_unknown(client):
        entry["advice"]["refused"].append({"id": "unknown-keys", "reason": line,
                                           "source": f"{client}'s own validation"})
    else:
        entry["notes"].append(line)


_RULE_KEYS = {"acks", "enable.idempotence", "retries", "max.in.flight.requests.per.connection",
              "delivery.timeout.ms", "linger.ms", "request.timeout.ms", "transactional.id",
              "transaction.timeout.ms", "isolation.level", "enable.auto.commit",
              "auto.offset.reset", "group.id", "failOnDataLoss", "startingOffsets"}


def _client_check(client: str, version: str, pairs: list):
    """The client's own check on the file as written, in the client's own names."""
    from producers import checkconfig

    written = [(k, _java_value(v)) for k, v in pairs]
    if client == "librdkafka":
        return checkconfig.librdkafka(written, version)
    if client == "java":
        return checkconfig.java(written, version)
    return checkconfig.kafka_python(written, version)


def _java_value(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return "all" if v == -1 else "none" if v is None else str(v)


def _findings(check: dict, advice: dict) -> list[str]:
    """Where the client's own check and the table disagree (either may be wrong)."""
    out = []
    if check["ok"] is False and "No such configuration property" in str(check["error"]):
        # librdkafka names a key it does not read: its own refusal, not the table's miss
        advice["refused"].append({"id": "unknown-keys", "reason": f"librdkafka: "
                                  f"{check['error']}", "source": "librdkafka's own validation"})
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
    from producers.clients import DEFAULT_CLIENT
    from verifier.report.advice import render_advice

    client = args.client or DEFAULT_CLIENT
    version = args.client_version or installed_version(client)
    entries = []
    for name, kind, pairs, notes in targets(args.files):
        entry = advise_one(name, kind, pairs, client, version,
                           client_given=args.client is not None)
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
    (``advice_check``, made where the document is finished: the matrix's report.html
    shows it) and the disagreements are printed. The exit code is the run's."""
    from verifier.report.advice import render_advice, render_comparison

    out = out or sys.stdout
    opts, scenarios = prepared[3], prepared[1]
    columns = column_configs(opts, scenarios)
    print("=== the advice for this run's configurations (verifier advise)", file=out)
    from verifier.cli.flagcheck import given_flags

    given = bool({"client", "clients"} & given_flags(args))
    for key, (name, kind, pairs, client) in columns.items():
        entry = advise_one(name, kind, pairs, client.split(":")[0],
                           installed_version(client), run_check=key == "user-0",
                           client_given=given)
        if key == "user-0":
            print(render_advice(entry), file=out)
        else:
            print(f"{name}: {entry['advice']['guarantee']}", file=out)
    out.flush()
    from verifier.cli.retry import run_with_retries

    known_bugs = getattr(args, "known_bug_plans", None)
    # each run forces a documented bug: the advice foresees no bug's anomalies, and the
    # known-bugs grid already judges each against the bug's documented status
    args.advice = None if known_bugs else ColumnAdvice(columns)  # verifier.cli.chaos._run's
    code = run_with_retries(run, args, prepared, out)  # --retry-not-exercised N, if asked
    if known_bugs:
        print("=== verdicts against the advice: not compared (the known-bugs profile forces "
              "documented bugs; the grid above judges them)", file=out, flush=True)
        return code
    # the kept runs' documents (run_with_retries leaves them in args.collect)
    rows = [row for doc in args.collect for row in doc.get("advice_check") or []]
    if rows:
        print(render_comparison(rows), file=out, flush=True)
    return code


def column_configs(opts, scenarios) -> dict[str, tuple[str, str, list, str]]:
    """Each column's configuration, keyed as :class:`ColumnAdvice` finds the column (its
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
                         read_pairs(Path(opts.user_config)), clients[0])
    for p in opts.pipelines:
        name, kind, pairs, _ = targets([p.spec])[0]
        out[pipeline_column(p.name)] = (p.name, kind, pairs, "spark")
    return out


def _column_key(column: dict) -> str:
    pids = column.get("pids") or []
    return "user-0" if "user-0" in pids else pids[0] if pids else str(column.get("mode"))


class ColumnAdvice:
    """The advice of a chaos run's column (its configuration's, keyed as
    :func:`column_configs` finds it), at the isolation level it is read at; None for a
    column without one. ``verifier.assess.finish`` compares each run's cells with it."""

    def __init__(self, columns: dict) -> None:
        self.columns = columns
        self._cache: dict[tuple, object] = {}

    def __call__(self, col: dict):
        key = _column_key(col)
        if key not in self.columns:
            return None
        isos = col.get("isolations") or []
        iso = isos[0] if len(isos) == 1 else "read_committed"
        if (key, iso) not in self._cache:
            name, kind, pairs, client = self.columns[key]
            extra = [("isolation.level", iso)] if kind == "producer" else []
            self._cache[(key, iso)] = _advice(name, kind, list(pairs) + extra,
                                              client.split(":")[0], installed_version(client))
        return self._cache[(key, iso)]


def _advice(name: str, kind: str, pairs: list, client: str, version: str | None = None):
    """The table's advice (pure) for a configuration as written: the keys the rules read,
    every Spark source option (kafka.*: Spark's own refusals), a pipeline's sink."""
    from verifier.judge.advice import Config, advise, canonical, normalize

    if kind in ("spark-source", "pipeline"):
        client, version = "spark", installed_version("spark")
    # each key as this client reads it: another client's name is not this client's setting
    settings = normalize([(k, v) for k, v in pairs if canonical(k, client) in _RULE_KEYS
                          or k.startswith("kafka.") or k == "sink"], client)
    return advise(Config(kind, client, version or installed_version(client), settings, name))
