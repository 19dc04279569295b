"""`verifier analyze`: load a finished run, run every check, write the verdict and reports.

Offline: needs the run folder and Spark (local, or a cluster via ``--spark-master``),
never Kafka.
"""

from __future__ import annotations

from pathlib import Path

from verifier.judge import verdict as V
from verifier.judge.checks import Derived, load_run, run_checks
from verifier.judge.checks.runner import DEFAULT_SAMPLE
from verifier.judge.checks.stats import counts_by_pid, partition_points, throughput
from verifier.judge.copier import judge_run as judge_copiers
from verifier.judge.exposure_facts import add_exposure
from verifier.judge.pipeline import judge_run as judge_pipelines
from verifier.orchestration.crosscheck import cross_check
from verifier.report.connections import summarize, unavailable
from verifier.rundata.connections import read_connections
from verifier.rundata.formats import RunFormatError, read_json
from verifier.rundata.layout import RunLayout

MAX_PLOTS = 4  # anomalous partitions plotted in report.html


def analyze(spark, run_dir: Path | str, cap: int = DEFAULT_SAMPLE, files=None,
            live: dict | None = None) -> dict:
    """The verdict.json document of the batch pass over a run (does not write anything),
    compared with the live result (``live``: the one the run computed, else read from the
    run folder)."""
    run = load_run(spark, run_dir, files)
    d = Derived(run)
    try:
        outcomes = run_checks(run, d, cap=cap)
        counts = counts_by_pid(d)
        piped, piped_counts = judge_pipelines(run_dir, run.config, run.drain, cap)
        piped += judge_copiers(run_dir, run.config, cap)
        outcomes, counts = outcomes + piped, {**counts, **piped_counts}
        by_pid = throughput(d)
        modes = {p: s.mode for p, s in run.config.producers.items()}
        thr: dict[str, dict[int, int]] = {}
        for pid, series in by_pid.items():
            acc = thr.setdefault(modes[pid], {})
            for b, n in series:
                acc[b] = acc.get(b, 0) + n
        extras = {
            "timeline": {
                "bucket_ms": 1000,
                "throughput": {m: sorted(s.items()) for m, s in thr.items()},
            }
        }
        doc = V.build(run, outcomes, counts, extras, cap=cap)
        doc["clients"] = clients_of(run_dir)
        doc["kafka_version"] = kafka_version_of(run_dir)
        doc["partition_plots"] = _plots(d, doc)
        cross_check(run, d, doc, run_dir, cap, live)  # the live result against these
    finally:
        d.release()
    add_connections(doc, run_dir)
    add_exposure(doc, run_dir, run, run.history)
    reason = interrupted(run_dir)
    if reason is not None:
        mark_interrupted(doc, reason)
    return doc


def interrupted(run_dir: Path | str) -> str | None:
    """Why and when a signal stopped the run (RUN/INTERRUPTED, written by `verifier chaos`),
    or None for a run that was not interrupted."""
    try:
        text = RunLayout(Path(run_dir)).interrupted.read_text(errors="replace").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"(the mark is unreadable: {exc.strerror})"
    return text or "interrupted"


def mark_interrupted(doc: dict, reason: str) -> None:
    """An interrupted run is no complete run: a column that would PASS (or be SKIPPED) is
    UNKNOWN, with the reason; a FAIL stays (the forbidden anomaly was seen)."""
    doc["interrupted"] = reason
    why = (f"the run was interrupted ({reason}): its load, faults or drain did not finish, "
           "so this is not the verdict of a complete run")
    for c in doc["columns"]:
        if c["verdict"] in (V.PASS, V.SKIPPED):
            c["verdict"] = V.UNKNOWN
            c["reasons"] = [*c.get("reasons", []), why]
    if doc.get("exit_code") != V.EXIT_ANOMALY:  # a failed connection check keeps its 1
        doc["exit_code"] = V.exit_code([c["verdict"] for c in doc["columns"]])


def kafka_version_of(run_dir: Path | str) -> str | None:
    """The broker release the run ran on (config.json ``kafka_version``; ``external``
    for a user's cluster); None for a run recorded before versions were."""
    try:
        return read_json(RunLayout(Path(run_dir)).config, "run-config").get("kafka_version")
    except RunFormatError:
        return None


def clients_of(run_dir: Path | str) -> list[str]:
    """The generator clients of the run and their versions (``java 4.1.1``), from
    config.json; a run recorded before clients were named ran kafka-python."""
    try:
        producers = read_json(RunLayout(Path(run_dir)).config, "run-config").get("producers")
    except RunFormatError:
        return []
    names = set()
    for p in (producers or {}).values():
        client, version = p.get("client") or "kafka-python", p.get("client_version")
        names.add(f"{client} {version}" if version else client)
    return sorted(names)


def connection_section(run_dir: Path | str, faults: list[dict]) -> dict:
    """The run's connection report (``verdict.json`` ``connections``) from the proxy's
    log, judged with the scenario's ``[connections]`` thresholds."""
    where = RunLayout(Path(run_dir))
    if not where.connections.exists():
        return unavailable("no connection log (no fault proxy: an external cluster)")
    try:
        log = read_connections(where.connections)
    except RunFormatError as exc:
        return unavailable(str(exc))
    try:
        spec = read_json(where.config, "run-config").get("scenario_spec") or {}
    except RunFormatError:
        spec = {}
    try:
        return summarize(log, faults, spec.get("connections"))
    except ValueError as exc:
        return unavailable(f"bad [connections] thresholds: {exc}")


def add_connections(doc: dict, run_dir: Path | str) -> dict:
    """Put the connection section into ``doc``; a finding the scenario makes forbidden
    fails a run that would otherwise pass (exit code 1)."""
    doc["connections"] = connection_section(run_dir, doc.get("faults") or [])
    if doc["connections"].get("failed") and doc.get("exit_code") == 0:
        doc["exit_code"] = 1
    return doc


def _plots(d: Derived, doc: dict) -> list[dict]:
    """Offsets around the sampled anomalies of the first few anomalous partitions."""
    where: dict[tuple[str, int], list[int]] = {}
    for col in doc["columns"]:
        for a in col["anomalies"].values():
            for s in a["sample"]:
                offs = [o for o in (s.get("offsets") or [s.get("offset")]) if o is not None]
                if s.get("topic") is not None and s.get("partition") is not None and offs:
                    where.setdefault((s["topic"], s["partition"]), []).extend(offs)
    plots = []
    for (topic, part), offs in sorted(where.items())[:MAX_PLOTS]:
        plots.append({"topic": topic, "partition": part, "anomalous_offsets": sorted(set(offs)),
                      "points": partition_points(d, topic, part, offs)})  # fmt: skip
    return plots


def write_outputs(doc: dict, out_dir: Path | str) -> list[Path]:
    """verdict.json, junit.xml and report.html into ``out_dir``."""
    from verifier.report import write_html, write_junit, write_verdict

    out = Path(out_dir)
    where = RunLayout(out)
    return [write_verdict(doc, where.verdict), write_junit([doc], where.junit),
            write_html(doc, where.report)]
