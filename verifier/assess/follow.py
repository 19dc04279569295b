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
self-test runs on its mutated copies too); :func:`verifier.assess.live.live_pass` turns
it into the run's verdict document. The batch pass then runs on the same data as the
cross-check (:mod:`verifier.assess.batch`).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from verifier.judge.checks import history as H
from verifier.judge.checks.remainder import LiveRemainder
from verifier.judge.definitions.stream import anomaly_table
from verifier.judge.model import ISOLATIONS, RunConfig
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
