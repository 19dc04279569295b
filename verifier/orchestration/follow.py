"""The run followed while it goes, so that its verdict comes right after the drain (issue 16).

A :class:`RunFollower` polls, every few seconds from the start of the load to the end of
the drain:

- the producers' **histories**, tailed (:class:`verifier.rundata.history.HistoryFollower`:
  complete lines only, across a generator's restarts) and reduced chunk by chunk to the
  batch pass's own mergeable parts (:func:`verifier.judge.checks.history.attempt_parts`,
  ``txn_flags``, in a :class:`~verifier.judge.checks.remainder.LiveRemainder`; throughput);
- the observer's newest **live state** per isolation level: every send attempt it holds at
  both levels, in the attempt's session, is settled (never lost, never part of a torn
  transaction: the state only grows); what stays **open** is the lag, the records a level
  never sees (aborted ones at read_committed) and the real losses;
- the observer's **observation files**, into an
  :class:`~verifier.judge.definitions.stream_rest.OffsetComparator` (inconsistent offsets
  between the two levels), and its **anomalies files**, kept so that the drain does not
  read them again.

After the drain :meth:`RunFollower.result` reads what is left of each, takes the final
states (:func:`streaming.live.final`) and judges only the remainder with the definitions
of :mod:`verifier.judge.definitions` (lost / unseen, torn transactions of the open
records, hanging partitions from drain.json: :meth:`LiveRemainder.finish`, which the
self-test runs on its mutated copies too); :func:`live_doc` turns it into the run's
verdict document. The batch pass then runs on the same data as the cross-check.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from verifier.judge import verdict as V
from verifier.judge.checks import history as H
from verifier.judge.checks.remainder import LiveRemainder
from verifier.judge.definitions.stream import anomaly_table
from verifier.judge.model import (
    ISOLATIONS,
    OBSERVER,
    CheckOutcome,
    Group,
    RunConfig,
    RunData,
)  # fmt: skip
from verifier.rundata.history import HistoryFollower
from verifier.rundata.layout import RunLayout

log = logging.getLogger(__name__)

POLL_S = 3.0
BUCKET_MS = 1000
#: the observation columns the offset comparison and the remainder's aborted reads read
_OBS_COLUMNS = ["topic", "partition", "offset", "run", "pid", "p", "seq", "ses", "txn",
                "abort", "ts_send", "foreign"]  # fmt: skip


class RunFollower:
    """Follows one run's files while it goes; :meth:`result` after the drain."""

    def __init__(self, run_dir: Path | str, config: RunConfig) -> None:
        self.run_dir, self.config = Path(run_dir), config
        self.where = RunLayout(self.run_dir)
        self.topics = {pid: p.topic for pid, p in config.producers.items()}
        self.tails = {pid: HistoryFollower(self.where.history(pid), config.run, pid)
                      for pid in config.producers}  # fmt: skip
        #: the histories' parts, the open send attempts, the offset comparison
        self.rest = LiveRemainder(config.run, self.topics)
        self.thr: dict[str, dict[int, int]] = {}
        self._obs_seen: dict[Path, tuple[int, int]] = {}
        self._anomalies: dict[Path, tuple[tuple[int, int], pa.Table]] = {}
        self.polls, self.poll_seconds, self.poll_cpu, self.history_lines = 0, 0.0, 0.0, 0
        self.error: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- while the run goes ------------------------------------------------------------

    def start(self, every: float = POLL_S) -> RunFollower:
        def loop():
            while not self._stop.wait(every):
                try:
                    self.poll()
                except Exception as exc:  # noqa: BLE001 - the drain reads what is left
                    self.error = f"{type(exc).__name__}: {exc}"
                    log.warning("following the run: %s", self.error)

        self._thread = threading.Thread(target=loop, name="follow", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def poll(self, states: dict | None = None) -> None:
        """One step: new history lines, the newest states, new observer files."""
        start, cpu = time.perf_counter(), time.thread_time()
        with self._lock:
            self._histories(fold=states is None)  # given states: the end, no fold
            if states is None:
                from streaming.live import newest_state

                states = {iso: newest_state(self.run_dir, iso) for iso in ISOLATIONS}
            if all(states.values()):
                self.rest.settle(states)
            self._observations()
            self._anomaly_files()
            self.polls += 1
            self.poll_seconds += time.perf_counter() - start
            self.poll_cpu += time.thread_time() - cpu

    def _histories(self, fold: bool = True) -> None:
        chunks = [t for t in (tail.poll() for tail in self.tails.values()) if t is not None]
        chunk = pa.concat_tables(chunks) if chunks else None
        if chunk is None or chunk.num_rows == 0:
            return
        self.history_lines += chunk.num_rows
        self.rest.add_history(chunk, fold)
        for pid, series in H.throughput(chunk, BUCKET_MS).items():
            acc = self.thr.setdefault(pid, {})
            for b, n in series:
                acc[b] = acc.get(b, 0) + n

    def _observations(self) -> None:
        from streaming.live import observation_files

        for iso in ISOLATIONS:
            for f in observation_files(self.run_dir, iso):
                try:
                    st = f.stat()
                except FileNotFoundError:
                    continue
                stamp = (st.st_mtime_ns, st.st_size)
                if self._obs_seen.get(f) == stamp:
                    continue
                self._obs_seen[f] = stamp
                self.rest.add_observations(iso, pq.read_table(f, columns=_OBS_COLUMNS))

    def _anomaly_files(self) -> None:
        from streaming.live import read_anomalies

        now = set()
        for iso in ISOLATIONS:
            for p in self.where.anomalies_of(iso).glob("batch-*.parquet"):
                try:
                    st = p.stat()
                except FileNotFoundError:
                    continue
                now.add(p)
                stamp = (st.st_mtime_ns, st.st_size)
                if p not in self._anomalies or self._anomalies[p][0] != stamp:
                    self._anomalies[p] = (stamp, read_anomalies(p))
        for p in set(self._anomalies) - now:
            del self._anomalies[p]

    def _read_anomalies(self, path: Path) -> pa.Table:
        from streaming.live import read_anomalies

        st = path.stat()
        got = self._anomalies.get(path)
        if got is not None and got[0] == (st.st_mtime_ns, st.st_size):
            return got[1]
        return read_anomalies(path)

    # -- after the drain ---------------------------------------------------------------

    def result(self, drain) -> dict | None:
        """The live result of the finished run: every anomaly row the live path decides,
        the per-producer counts and what it took; None when the observer ran without
        live checks. ``drain``: the run's :class:`~verifier.judge.model.Drain`."""
        from streaming.live import final

        self.stop()
        start = time.perf_counter()
        with self._lock:
            states, tables = {}, []
            for iso in ISOLATIONS:
                got = final(self.run_dir, iso, self.config.sink, self.config.run,
                            self.topics, read=self._read_anomalies)
                if got is None:
                    return None
                states[iso], found = got
                tables.append(found)
        self.poll(states)  # the rest of the histories and files, settled on the final states
        with self._lock:
            rest = self.rest.finish(states, drain)
        table = pa.concat_tables([*tables, anomaly_table(rest.rows)])
        return {"table": table, "states": states,
                "counts": _counts(rest.counts, states),
                "throughput": {pid: sorted(s.items()) for pid, s in self.thr.items()},
                "started": {pid: t.started for pid, t in self.tails.items()},
                "seconds": round(time.perf_counter() - start, 3),
                "follow": {"polls": self.polls, "seconds": round(self.poll_seconds, 3),
                           "cpu_seconds": round(self.poll_cpu, 3),
                           "history_lines": self.history_lines, "open": rest.open,
                           "offsets_waiting": self.rest.waiting(),
                           "error": self.error}}  # fmt: skip


def _counts(sends: dict[str, dict[str, int]], states: dict) -> dict[str, dict[str, int]]:
    """Per producer, what the verdict's columns count (the batch pass's names): sends by
    outcome and committed records from the histories (``sends``: the remainder's, kept
    as the run went), observed = distinct records each level's state holds."""
    out = {pid: dict(c) for pid, c in sends.items()}
    for iso, live in states.items():
        for pid, n in live.records.items():
            out.setdefault(pid, {})[f"observed_{iso}"] = n
    for c in out.values():
        c.setdefault("committed", 0)
        c["observed"] = max(c.get(f"observed_{iso}", 0) for iso in ISOLATIONS)
    return out


def outcomes_of(t: pa.Table, config: RunConfig, cap: int) -> list[CheckOutcome]:
    """Anomaly rows (Arrow, :data:`~verifier.judge.definitions.stream.ANOMALY_SCHEMA`) as
    the batch runner reduces them: per check, counts per (kind, mode, isolation), the
    first ``cap`` by place (nulls first, as Spark orders) and the timeline; in Arrow, so
    tens of thousands of anomalies cost no Python per row."""
    from verifier.judge.checks.runner import CHECKS

    def lookup(col, table: dict):
        return pc.take(pa.array(list(table.values()), pa.string()),
                       pc.index_in(col, pa.array(list(table), pa.string())))

    modes = {pid: p.mode for pid, p in config.producers.items()}
    by_topic = {p.topic: p.mode for p in config.producers.values()}
    mode = pc.coalesce(lookup(t["pid"], modes), lookup(t["topic"], by_topic),
                       pa.scalar("(unattributed)"))
    t = t.append_column("mode", mode)
    bucket = pc.multiply(pc.divide(t["t"], BUCKET_MS), BUCKET_MS)
    keys = ["kind", "mode", "isolation"]
    per = t.append_column("b", bucket).group_by([*keys, "b"]).aggregate([([], "count_all")])
    groups: dict[tuple, Group] = {}
    for r in per.to_pylist():
        g = groups.setdefault((r["kind"], r["mode"], r["isolation"]),
                              Group(r["kind"], r["mode"], r["isolation"], 0, []))
        g.count += r["count_all"]
        if r["b"] is not None:
            g.timeline.append((r["b"], r["count_all"]))
    order = [(k, "ascending", "at_start")
             for k in ("topic", "partition", "offset", "pid", "seq", "txn")]
    for (kind, m, iso), g in groups.items():
        g.timeline.sort()
        mine = pc.and_(pc.equal(t["kind"], kind), pc.equal(t["mode"], m))
        mine = pc.and_(mine, pc.is_null(t["isolation"]) if iso is None
                       else pc.fill_null(pc.equal(t["isolation"], iso), False))
        sel = first_rows(t.filter(mine), order, cap)
        g.sample = [_plain(a) for a in sel.drop_columns(["mode"]).to_pylist()]
    out = []
    for name, _, kinds in CHECKS:
        o = CheckOutcome(name, kinds)
        o.groups = [g for (k, _, _), g in groups.items() if k in kinds]
        out.append(o)
    return out


def first_rows(t: pa.Table, order: list[tuple[str, str, str]], cap: int) -> pa.Table:
    """The first ``cap`` rows of ``t`` by ``order`` (ascending keys, nulls first), ties in
    table order: what a stable sort of the whole table gives, without sorting all of it.

    When no key column is partly null, ``select_k`` finds the cap-th key K and only the
    rows at or below K are sorted: those below are all in the answer, and every row equal
    to K is there too, so the stable sort of the few picks the same rows in the same order
    (a 20-minute soak's 50k anomalies: the verdict's samples cost ~0.1 s sorted whole)."""
    def whole(x: pa.Table) -> pa.Table:
        return x.take(pc.sort_indices(x, sort_keys=order)[:cap])

    if t.num_rows <= 8 * cap:
        return whole(t)
    keys = [k for k, _, _ in order if t[k].null_count < t.num_rows]  # all-null: no order
    if not keys:
        return t.slice(0, cap)
    if any(t[k].null_count for k in keys):
        return whole(t)
    kth = whole(t.take(pc.select_k_unstable(t, cap, [(k, "ascending") for k in keys])))
    at = kth.num_rows - 1
    le = None
    for k in reversed(keys):  # lexicographic (key <= K), from the last key to the first
        bound = kth[k][at]
        le = (pc.less_equal(t[k], bound) if le is None else
              pc.or_(pc.less(t[k], bound), pc.and_(pc.equal(t[k], bound), le)))
    return whole(t.filter(le))


def _plain(a: dict) -> dict:
    d = {k: v for k, v in a.items() if k != "evidence" and v is not None}
    d["evidence"] = orjson.loads(a["evidence"]) if a.get("evidence") else {}
    return d


def live_doc(run_dir: Path | str, follower: RunFollower, cap: int = 20,
             connections: bool = True) -> dict | None:
    """The run's verdict document from the live path (no Spark): the result of
    :meth:`RunFollower.result` judged by the expectation table as the batch pass's
    results are (:func:`verifier.judge.verdict.build`); None without live checks.
    ``connections``: add the connection report (a pass over the proxy's log that grows
    with the run, 4 s after 20 minutes; the orchestrator adds it after the verdict)."""
    from verifier.judge.checks.load import load_drain
    from verifier.judge.copier import judge_run as judge_copiers
    from verifier.judge.exposure_facts import add_exposure
    from verifier.judge.pipeline import judge_run as judge_pipelines
    from verifier.orchestration.analyze import (
        add_connections,
        clients_of,
        interrupted,
        kafka_version_of,
        mark_interrupted,
    )  # fmt: skip
    from verifier.rundata.nemesis import read_nemesis
    from verifier.rundata.startfail import describe, read_start_failures

    start = time.perf_counter()
    where = RunLayout(Path(run_dir))
    cfg = follower.config
    drain = load_drain(where.drain)
    got = follower.result(drain)
    if got is None:
        return None
    failed = read_start_failures(where.start_failures)
    run = RunData(config=cfg, events=None, observations=None,
                  combos=[(OBSERVER, iso) for iso in ISOLATIONS], drain=drain,
                  drain_partitions=None, started=got["started"],
                  nemesis=read_nemesis(where.nemesis, cfg.run),
                  start_failures={pid: describe(e) for pid, e in failed.items()})  # fmt: skip
    outcomes = outcomes_of(got["table"], cfg, cap)
    piped, piped_counts = judge_pipelines(run_dir, cfg, drain, cap)
    piped += judge_copiers(run_dir, cfg, cap)
    thr: dict[str, dict[int, int]] = {}
    for pid, series in got["throughput"].items():
        acc = thr.setdefault(cfg.producers[pid].mode, {})
        for b, n in series:
            acc[b] = acc.get(b, 0) + n
    extras = {"timeline": {"bucket_ms": BUCKET_MS,
                           "throughput": {m: sorted(s.items()) for m, s in thr.items()}}}
    doc = V.build(run, outcomes + piped, {**got["counts"], **piped_counts}, extras, cap=cap)
    doc["clients"] = clients_of(run_dir)
    doc["kafka_version"] = kafka_version_of(run_dir)
    if connections:
        add_connections(doc, run_dir)
    add_exposure(doc, run_dir, run)
    reason = interrupted(run_dir)
    if reason is not None:
        mark_interrupted(doc, reason)
    doc["verdict_from"] = {"path": "live", "seconds": round(time.perf_counter() - start, 3),
                           "remainder_seconds": got["seconds"], "follow": got["follow"],
                           "live_rows": got["table"].num_rows}  # fmt: skip
    doc["_live"] = got  # for the cross-check; never written (verdict.json drops it)
    return doc
