"""Tiny hand-written runs for the check tests: a few history lines and observation rows.

``RunBuilder.write`` models the common case (a send acknowledged at an offset and seen
by every reader at both levels); tests then add the one twist that makes an anomaly, or
the near miss that must not.

The builder judges through the pass its ``engine`` names: None (the unit tier) runs the
definitions in plain Arrow (:mod:`verifier.judge.selftest.local`, no JVM); a SparkSession
runs the batch checks themselves (the integration tier runs every case both ways).
"""

from __future__ import annotations

import pyarrow as pa

from verifier.judge.checks import RunData, run_checks
from verifier.judge.checks.load import OBSERVATION_COLUMNS
from verifier.judge.model import Drain, ProducerSpec, RunConfig
from verifier.rundata.history import HISTORY_SCHEMA

RUN = "r1"
T0 = 1_795_314_800_000
ALL = (("spark", "read_committed"), ("spark", "read_uncommitted"),
       ("plain", "read_committed"), ("plain", "read_uncommitted"))  # fmt: skip
RC_ONLY = tuple(c for c in ALL if c[1] == "read_committed")
RU_ONLY = tuple(c for c in ALL if c[1] == "read_uncommitted")
#: OBSERVATION_COLUMNS as Arrow types (the Arrow pass's observations)
OBS_ARROW = pa.schema([(c, {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(),
                            "boolean": pa.bool_()}[t]) for c, t in OBSERVATION_COLUMNS.items()])


class RunBuilder:
    """Accumulates history events and observation rows, then builds a :class:`RunData`."""

    def __init__(self, engine=None, mode: str = "at-least-once", topic: str = "t",
                 sink="exactly-once"):
        self.spark = engine
        self.producers = {"p1": ProducerSpec("p1", mode, mode, topic)}
        self.sink = sink
        self.events: list[dict] = []
        self.rows: list[dict] = []
        self.drain = Drain(completed=True)
        self.ends: list[tuple] = []
        self.clock = T0

    def _tick(self) -> int:
        self.clock += 10
        return self.clock

    def producer(self, pid: str, mode: str, topic: str) -> RunBuilder:
        """A second (third, ...) producer with its own mode and topic."""
        self.producers[pid] = ProducerSpec(pid, mode, mode, topic)
        return self

    def event(self, type_: str, f: str, pid="p1", **kw) -> RunBuilder:
        self.events.append({"type": type_, "f": f, "pid": pid, "t": self._tick(), **kw})
        return self

    def send(self, p, seq, ses=1, txn=None, outcome="ok", offset=None, pid="p1") -> RunBuilder:
        """An invoke and its completion (``outcome=None``: the process died mid-send)."""
        ident = {"ses": ses, "p": p, "seq": seq, "txn": txn}
        self.event("invoke", "send", pid, **ident)
        if outcome is not None:
            self.event(outcome, "send", pid, **ident,
                       offset=offset if outcome == "ok" else None)  # fmt: skip
        return self

    def txn(self, txn, ses=1, end="commit", outcome="ok", abort=False, pid="p1") -> RunBuilder:
        """begin ... end: call it after the transaction's sends (order is irrelevant)."""
        self.event("invoke", "begin", pid, ses=ses, txn=txn, abort=abort)
        self.event("ok", "begin", pid, ses=ses, txn=txn, abort=abort)
        self.event("invoke", end, pid, ses=ses, txn=txn)
        if outcome is not None:
            self.event(outcome, end, pid, ses=ses, txn=txn)
        return self

    def see(self, p, seq, offset, ses=1, txn=None, combos=ALL, pid="p1", at=None,
            **over) -> RunBuilder:  # fmt: skip
        """Observation rows of one record by the given (reader, isolation) pairs, in its
        producer's topic at partition ``p`` unless ``at`` = (topic, partition) says where."""
        spec = self.producers.get(pid)
        topic, part = at or ((spec.topic if spec else "t"), p)
        for reader, iso in combos:
            row = {"reader": reader, "isolation": iso, "topic": topic, "partition": part,
                   "offset": offset, "run": RUN, "pid": pid, "ses": ses, "p": p, "seq": seq,
                   "txn": txn, "abort": False, "ts_send": T0 + (seq or 0),
                   "ts_broker": T0 + (seq or 0) + 1,
                   "foreign": False, "error": None}  # fmt: skip
            row.update(over)
            self.rows.append(row)
        return self

    def write(self, p, seq, offset, ses=1, txn=None, combos=ALL, pid="p1") -> RunBuilder:
        """A send acknowledged at ``offset`` and seen there by ``combos``."""
        return self.send(p, seq, ses, txn, "ok", offset, pid).see(p, seq, offset, ses, txn,
                                                                 combos, pid)  # fmt: skip

    def end_offsets(self, p, rc, ru, topic="t") -> RunBuilder:
        self.ends.append(
            {"topic": topic, "partition": p, "end_read_committed": rc, "end_read_uncommitted": ru}
        )
        return self

    def build(self) -> RunData:
        from verifier.judge.checks.load import drain_frame

        hist = pa.Table.from_pylist(
            self.events, HISTORY_SCHEMA.append(pa.field("pid", pa.string()))
        )
        combos = sorted({(r["reader"], r["isolation"]) for r in self.rows}) or list(ALL)
        drain = Drain(self.drain.completed, self.ends, self.drain.behind)
        config = RunConfig(RUN, "unit", self.sink, self.producers)
        if self.spark is None:  # the Arrow pass reads plain tables
            obs = pa.Table.from_pylist(
                [{c: r[c] for c in OBSERVATION_COLUMNS} for r in self.rows], OBS_ARROW)
            return RunData(config, None, obs, combos, drain, None,
                           {pid: True for pid in self.producers}, [], history=hist)
        obs_schema = ", ".join(f"`{c}` {t}" for c, t in OBSERVATION_COLUMNS.items())
        obs = self.spark.createDataFrame(
            [tuple(r[c] for c in OBSERVATION_COLUMNS) for r in self.rows], obs_schema
        )
        return RunData(
            config,
            self.spark.createDataFrame(hist),
            obs,
            combos,
            drain,
            drain_frame(self.spark, drain),
            {pid: True for pid in self.producers},
            [],
        )

    def check(self, name: str) -> dict[str, list[dict]]:
        """Run one check; kind -> every anomaly sample (cap large enough for tests)."""
        (out,) = self._run_checks(self.build(), only={name}, cap=100)
        assert out.error is None, out.error
        found: dict[str, list[dict]] = {}
        for g in out.groups:
            found.setdefault(g.kind, []).extend(g.sample)
        return found

    def verdicts(self) -> dict[str, dict]:
        """Every check, then the verdict: report column name -> its verdict.json column."""
        from verifier.judge import verdict as V

        run = self.build()
        return {c["name"]: c for c in V.build(run, self._run_checks(run, cap=100), {})["columns"]}

    def _run_checks(self, run: RunData, **kw):
        if self.spark is None:
            from verifier.judge.selftest import local

            return local.run_checks(run, **kw)
        return run_checks(run, **kw)


def verdict_without_checks(run_dir) -> dict:
    """The verdict document of a run folder judged without Spark: no check runs, so what
    decides is the run's own files (start failures, drain, nemesis history); finished as
    every verdict is (exposure, interruption, exit code), without the connection report."""
    from verifier.assess.facts import read_facts
    from verifier.assess.finish import Ending, Judged, finish
    from verifier.judge import verdict as V

    facts = read_facts(run_dir)
    f = facts.run_files()
    run = RunData(config=f.config, events=None, observations=None, combos=f.combos,
                  drain=f.drain, drain_partitions=None, started=f.started,
                  nemesis=f.nemesis, history=f.history, start_failures=f.start_failures)
    doc = V.build(run, [], {})
    doc["clients"] = []
    return finish(Judged(doc, facts), Ending(connections=False))
