"""The facts a run's exposure is computed from, read from its folder, and the step that
adds the exposure to a verdict document (both the live verdict and `verifier analyze`
call :func:`add_exposure`, so the two agree).

The computation is pure (``verifier.judge.exposure``); this module reads: the nemesis
history (fault windows, the proxy rules' per-client counts, the leaders at a broker
fault's start), the producers' histories (sends and transactions), and the streaming
queries' checkpoints (observer and pipelines: when each batch was planned, from
``offsets/N``'s ``batchTimestampMs``, and committed, from ``commits/N``'s time).
"""

from __future__ import annotations

from pathlib import Path

from verifier.judge import verdict as V
from verifier.judge.exposure import exposure
from verifier.judge.faults import app_prefixes
from verifier.judge.faults.facts import Batch, ColumnSpec, RunFacts, Sends, Txn
from verifier.rundata.checkpoint import planned_batches
from verifier.rundata.columns import is_app_column
from verifier.rundata.layout import RunLayout
from verifier.rundata.plan import plan_of
from verifier.rundata.vocab import ISOLATIONS


def _sends_and_txns(table) -> tuple[dict[str, Sends], dict[str, list[Txn]]]:
    """Per pid: its sends (by invoke time) and transactions, from the history table.
    Columnar (Arrow joins): a run's history has tens of thousands of lines per mode."""
    import pyarrow as pa
    import pyarrow.compute as pc

    key = ["pid", "ses", "p", "seq"]
    sends = table.filter(pc.equal(table["f"], "send"))
    is_invoke = pc.equal(sends["type"], "invoke")
    invoked = sends.filter(is_invoke).group_by(key).aggregate([("t", "min"), ("txn", "max")])
    done = sends.filter(pc.invert(is_invoke)).group_by(key).aggregate([("t", "min")]) \
        .rename_columns([*key, "done"])
    joined = invoked.join(done, keys=key, join_type="left outer")
    joined = joined.sort_by([("pid", "ascending"), ("t_min", "ascending")])
    out: dict[str, Sends] = {}
    for pid in pc.unique(joined["pid"]).to_pylist():
        rows = joined.filter(pc.equal(joined["pid"], pid))
        out[pid] = Sends(rows["t_min"].to_pylist(), rows["p"].to_pylist(),
                           rows["done"].to_pylist(), rows["txn_max"].to_pylist())
    tx: dict[str, list[Txn]] = {}
    tkey = ["pid", "ses", "txn"]
    begins = table.filter(pc.and_(pc.equal(table["f"], "begin"),
                                  pc.equal(table["type"], "invoke")))
    if begins.num_rows:
        begun = begins.group_by(tkey).aggregate([("t", "min")])
        ends = table.filter(pc.and_(pc.is_in(table["f"], pa.array(["commit", "abort"])),
                                    pc.not_equal(table["type"], "invoke")))
        ended = ends.group_by(tkey).aggregate([("t", "min")]).rename_columns([*tkey, "end"])
        both = begun.join(ended, keys=tkey, join_type="left outer")
        for pid, txn, begin, end in zip(*(both[c].to_pylist() for c in
                                          ("pid", "txn", "t_min", "end")), strict=True):
            tx.setdefault(pid, []).append(Txn(txn, begin, end))
    return out, tx


def checkpoint_batches(checkpoint: Path) -> list[Batch]:
    """A streaming query's batches from its checkpoint (verifier.rundata.checkpoint), each
    with the range it read: from the previous batch's end offsets to its own; [] when it
    has none."""
    out, previous = [], {}
    for b in planned_batches(checkpoint):
        ends = b.ends or {}
        ranges = {k: (previous.get(k, 0), e) for k, e in ends.items()}
        out.append(Batch(b.batch, b.planned_ms, b.committed_ms, ranges))
        previous = ends
    return out


def _batches(run_dir: Path, config) -> dict[str, list[Batch]]:
    from verifier.rundata.pipelines import PipelineLayout

    where = RunLayout(run_dir)
    out = {}
    for iso in ISOLATIONS:
        got = checkpoint_batches(where.checkpoint(iso))
        if got:
            out[f"observer/{iso}"] = got
    for name in config.pipelines:
        layout = PipelineLayout(run_dir, name)
        got = []
        for cp in layout.checkpoints():
            got += checkpoint_batches(cp)  # a lost checkpoint's batches came first
        if got:
            out[f"pipeline/{name}"] = got
    return out


def facts_of(run_dir: Path, doc: dict, run, history=None) -> RunFacts:
    """The run's facts; ``history``: the producers' operations table when the caller has
    it (the batch pass), else read here."""
    from verifier.rundata.history import read_histories

    config = run.config
    label_to_name = {p.label: name for name, p in config.pipelines.items()}
    client_pid, txn_pid = _own_ids(Path(run_dir), config)
    columns = []
    for c in doc["columns"]:
        pids = tuple(c.get("pids") or ())
        pipeline = label_to_name.get(c["mode"]) if not pids else None
        columns.append(ColumnSpec(
            name=c["name"], mode=c["mode"], pids=pids,
            topics=tuple(c.get("topics") or ()), transactional=c["expect"] == "transactional",
            pipeline=pipeline, app=c["mode"] if is_app_column(c["mode"]) else None,
            isolations=tuple(c.get("isolations") or ISOLATIONS),
            transactional_ids=tuple(t for t, pid in txn_pid.items() if pid in pids),
            client_ids=tuple(i for i, pid in client_pid.items() if pid in pids),
            client_prefixes=app_prefixes(config.run, c["mode"])))
    if history is None:
        try:
            history, _ = read_histories(RunLayout(run_dir).histories, config.run,
                                        list(config.producers))
        except Exception:  # noqa: BLE001 - no histories: exposure from the rest
            history = None
    sends, txns = _sends_and_txns(history) if history is not None else ({}, {})
    return RunFacts(nemesis=run.nemesis, columns=columns, sends=sends, txns=txns,
                      batches=_batches(Path(run_dir), config),
                      topic_of={pid: s.topic for pid, s in config.producers.items()},
                      client_pid=client_pid,
                      log_start={f"{t}-{p}": int(o) for (t, p), o in
                                 (getattr(run.drain, "log_start", None) or {}).items()})


def _own_ids(run_dir: Path, config) -> tuple[dict[str, str], dict[str, str]]:
    """(client id -> pid, transactional id -> pid): the client ids the producers' own
    settings name (a user's ``client.id`` from ``--producer-config``: the plan's
    ``client_ids()``; the others are ``verifier.generator.<pid>``,
    verifier.judge.faults.family), and the transactional producers' ids (the plan's
    ``transactional_ids()``; without a plan the generators' ``<run>.<pid>``)."""
    plan = plan_of(run_dir)
    if plan is None:
        return {}, {f"{config.run}.{pid}": pid for pid, p in config.producers.items()
                    if p.expect == "transactional"}
    return plan.client_ids(), plan.transactional_ids()


def add_exposure(doc: dict, run_dir: Path | str, run, history=None) -> None:
    """Every column's ``exposure``, and NOT EXERCISED for a PASS that a fault missed."""
    facts = facts_of(Path(run_dir), doc, run, history)
    V.apply_exposure(doc, exposure(facts))
