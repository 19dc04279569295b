"""`verifier selftest RUN_DIR`: would the checks have caught it, on *this* run?

A mutation engine over a real recorded run (issue 22). The run is analysed as it is (the
baseline); then, one copy per mutation, each anomaly kind the run's modes can show is
injected (lost, duplicates of each kind, duplicate delivery, reorder, aborted read, torn
and hanging transactions, inconsistent offset, foreign record), and so are legal near
misses (an info send never written, a marker gap, a re-send after a restart, interleaved
producers). Every copy is judged by the same definitions and verdicts as ``verifier
analyze``, on what its mutation can change: the partitions and transactions it touched
(:mod:`verifier.judge.selftest.scope`, without Spark), the rest of the run as its own
analysis found it (``scoped=False`` analyses each copy whole, the reference); a row of
the result says whether the injected anomaly was detected with the right kind and place,
whether each column's verdict is what the expectation table says (the baseline's, or
FAIL where the injected kind is forbidden), and which anomalies appeared that nothing
injected (false alarms). Seeded: the same seed picks the same targets. Importable for
the orchestrator::

    result = selftest("runs/ack-loss/20261122T071848Z", seed=1)
    result.ok, result.rows, print(result.render())
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from verifier.judge import expectations as X
from verifier.judge import verdict as V
from verifier.judge.selftest.analysis import Analysis, analyse, live_rows
from verifier.judge.selftest.image import RunImage
from verifier.judge.selftest.mutations import MUTATIONS, Catalog, Expect, Mutation


@dataclass
class SelfTestRow:
    mutation: str
    kind: str  # the injected kind, or "legal"
    place: str
    detected: bool  # every expected anomaly found with its kind and place (legal: True)
    verdict_ok: bool  # every column's verdict as the expectation table says
    false_alarms: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)  # "column: got (expected)" mismatches
    kept: str | None = None
    #: where the live path (replayed on the copy, remainder included) and the batch
    #: checks differ
    live_differ: list[str] = field(default_factory=list)
    #: what the live path found beyond the baseline ("torn-transaction@read_committed +1")
    live_found: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.detected and self.verdict_ok and not self.false_alarms
                and not self.live_differ)

    def as_json(self) -> dict:
        return {"mutation": self.mutation, "kind": self.kind, "place": self.place,
                "detected": self.detected, "verdict_ok": self.verdict_ok,
                "false_alarms": self.false_alarms, "missed": self.missed,
                "verdicts": self.verdicts, "kept": self.kept, "ok": self.ok,
                "live_differ": self.live_differ, "live_found": self.live_found}  # fmt: skip


@dataclass
class SelfTestResult:
    run_dir: str
    seed: int
    rows: list[SelfTestRow]
    skipped: list[str]  # mutations the run gives no target for, with why
    baseline: dict[str, str]  # column -> verdict of the run as recorded
    #: the run's own anomaly counts as recorded, per (kind, mode, isolation)
    baseline_counts: Counter = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return bool(self.rows) and all(r.ok for r in self.rows)

    @property
    def passed(self) -> int:
        return sum(r.ok for r in self.rows)

    def as_json(self) -> dict:
        return {"run": self.run_dir, "seed": self.seed, "ok": self.ok, "passed": self.passed,
                "baseline": self.baseline, "skipped": self.skipped,
                "rows": [r.as_json() for r in self.rows]}  # fmt: skip

    def render(self) -> str:
        head = ("mutation", "injected", "detected (kind+place)", "verdict as table",
                "live = batch", "false alarms")
        body = [(r.mutation, f"{r.kind} {r.place}" if r.kind != "legal" else f"legal: {r.place}",
                 "yes" if r.detected else "NO", "yes" if r.verdict_ok else "NO",
                 "yes" if not r.live_differ else "NO",
                 ", ".join(r.false_alarms) or "none") for r in self.rows]  # fmt: skip
        widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
        lines = [f"selftest {self.run_dir}  seed {self.seed}",
                 "baseline: " + ", ".join(f"{k} {v}" for k, v in self.baseline.items()),
                 "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                  for row in body]  # fmt: skip
        for r in self.rows:
            for m in r.missed:
                lines.append(f"  {r.mutation}: missed {m}")
            for v in r.verdicts:
                lines.append(f"  {r.mutation}: verdict {v}")
            for x in r.live_differ[:5]:
                lines.append(f"  {r.mutation}: live and batch differ: {x}")
            if r.kept:
                lines.append(f"  {r.mutation}: copy kept in {r.kept}")
        for s in self.skipped:
            lines.append(f"  not applicable: {s}")
        lines.append(f"{self.passed}/{len(self.rows)} mutations as expected: "
                     + ("PASS" if self.ok else "FAIL"))
        return "\n".join(lines)


def _judge(m: Mutation, base: Analysis, got: Analysis) -> SelfTestRow:
    missed = [e.where() for e in m.expects if not any(
        a["kind"] == e.kind and a["mode"] == e.mode and a["isolation"] == e.isolation
        and e.matches(a) for a in got.rows)]  # fmt: skip
    wanted: Counter = Counter()
    for e in m.expects:
        wanted[(e.kind, e.mode, e.isolation)] += e.rows
    alarms = []
    for key in sorted(set(got.counts) | set(base.counts) | set(wanted), key=str):
        delta = got.counts[key] - base.counts[key]
        if delta != wanted[key]:
            kind, mode, iso = key
            what = f"{kind} {mode}{'@' + iso if iso else ''}"
            if delta > wanted[key]:
                alarms.append(f"{what} +{delta - wanted[key]}")
            elif key not in wanted:
                alarms.append(f"{what} {delta} (a baseline anomaly vanished)")
            else:
                missed.append(f"{what}: {delta} new rows, {wanted[key]} expected")
    alarms += [f"check {c} crashed" for c in got.crashed]
    verdicts = []
    for name, verdict in got.verdicts.items():
        col = got.columns[name]
        forbidden = any(
            e.mode == col.mode and (e.isolation is None or e.isolation in col.isolations)
            and V._entry(col, e.kind, got.sink, got.faults) == X.FORBIDDEN
            for e in m.expects)  # fmt: skip
        want = V.FAIL if forbidden else base.verdicts.get(name, V.PASS)
        if verdict != want:
            verdicts.append(f"{name}: {verdict} (expected {want})")
    live_found = [f"{k}{'@' + iso if iso else ''} +{n - base.live_counts[(k, iso)]}"
                  for (k, iso), n in sorted(got.live_counts.items(), key=str)
                  if n > base.live_counts[(k, iso)]]  # fmt: skip
    return SelfTestRow(m.name, m.kind, m.place, detected=not missed, verdict_ok=not verdicts,
                       false_alarms=alarms, missed=missed, verdicts=verdicts,
                       live_differ=got.live_differ, live_found=live_found)  # fmt: skip


def selftest(run_dir: Path | str, seed: int = 0, keep: Path | str | None = None, spark=None,
             only: set[str] | None = None, progress=None, scoped: bool = True) -> SelfTestResult:
    """Mutate copies of ``run_dir`` and check each (see the module docstring).

    ``scoped``: judge each copy on what its mutation changed only (the partitions and
    transactions it touched, :mod:`verifier.judge.selftest.scope`), the rest taken from
    the run's own analysis; False analyses every copy whole, through Spark, as ``verifier
    analyze`` would (the reference: both give the same table).

    ``keep``: a folder where every copy whose row is not ok is kept (a bug report's
    evidence); ``only``: mutation names to run (default all); ``progress``: called with
    (done, total, mutation name) before each copy is analysed. Raises
    :class:`~verifier.rundata.formats.RunFormatError` for a run that cannot be read.
    """
    from verifier.judge.checks.load import read_run_files
    from verifier.judge.selftest.scope import analyse_scoped, scope_of  # Arrow-only, lazily

    run_dir = Path(run_dir)
    meta = read_run_files(run_dir)  # a run that cannot be read fails here, before Spark works
    ours = spark is None
    if ours:  # the CLI and the orchestrator pass theirs (configured by streaming.session)
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        # a running context (a test's) is asked directly: getActiveSession is per JVM thread
        ours = SparkContext._active_spark_context is None
        spark = SparkSession.builder.master("local[2]").appName(
            "verifier-selftest").getOrCreate()  # a running context's session if there is one
    scratch = Path(tempfile.mkdtemp(prefix="verifier-selftest-"))
    try:
        base = analyse(spark, run_dir)
        image = RunImage.load(run_dir)
        catalog = Catalog(image.clone(), base.rows, random.Random(seed))
        assert catalog._clean is not None  # indexed once, before the bound copies share it
        rows, skipped = [], []
        for i, make in enumerate(MUTATIONS):
            name = make.__name__
            img = image.clone()
            rng = random.Random(f"{seed}:{name}")
            m = make(img, catalog.bound(img, rng))
            if m is None:
                skipped.append(f"{name}: no suitable record in this run")
                continue
            if only is not None and m.name not in only and name not in only:
                continue
            if progress is not None:
                progress(i, len(MUTATIONS), m.name)
            scope = scope_of(image, img) if scoped else None
            if scope is not None:
                row = _judge(m, base, analyse_scoped(base, image, img, scope, meta))
            else:
                copy = img.write(scratch / f"{i:02d}-{m.name}")
                row = _judge(m, base, analyse(spark, copy))
                shutil.rmtree(copy, ignore_errors=True)
            if not row.ok and keep is not None:
                dest = Path(keep) / f"{i:02d}-{m.name}"
                shutil.rmtree(dest, ignore_errors=True)
                Path(keep).mkdir(parents=True, exist_ok=True)
                img.write(dest)
                row.kept = str(dest)
            rows.append(row)
        return SelfTestResult(str(run_dir), seed, rows, skipped, base.verdicts, base.counts)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if ours:
            spark.stop()


__all__ = ["Expect", "Mutation", "SelfTestResult", "SelfTestRow", "analyse", "live_rows",
           "selftest"]
