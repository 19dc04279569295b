"""The live result right after the drain, on a recorded run whose observer files are fed
through the live checks as the sink would: nothing forbidden as recorded; a record the
observer never read is lost where loss is forbidden; no live state, no result."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from streaming.live import LiveSink, observation_files
from verifier.orchestration.crosscheck import live_at_drain
from verifier.rundata.formats import read_json
from verifier.rundata.layout import layout

RUN = Path(__file__).parents[2] / "data" / "runs" / "ack-loss"
ISOS = ("read_committed", "read_uncommitted")


def _feed(run_dir: Path, drop: tuple[str, int] | None = None) -> None:
    """The live checks over the run's observer files, in order (``drop``: leave out the
    record of (pid, seq) at partition 0 from every file first, as if never read)."""
    cfg = read_json(layout(run_dir).config, "run-config")
    topics = {pid: p["topic"] for pid, p in cfg["producers"].items()}
    for iso in ISOS:
        sink = LiveSink(run_dir, iso, cfg["sink"], cfg["run"], topics)
        for i, f in enumerate(observation_files(run_dir, iso)):
            t = pq.read_table(f)
            if drop is not None:
                hit = pc.and_(pc.and_(pc.equal(t["pid"], drop[0]), pc.equal(t["seq"], drop[1])),
                              pc.equal(t["partition"], 0))
                t = t.filter(pc.invert(pc.fill_null(hit, False)))
                pq.write_table(t, f)
            sink(t, i, f.name)


def test_no_live_state_no_result(tmp_path):
    run = shutil.copytree(RUN, tmp_path / "run")
    assert live_at_drain(run) is None


def test_as_recorded_nothing_forbidden(tmp_path):
    run = shutil.copytree(RUN, tmp_path / "run")
    _feed(run)
    found = live_at_drain(run)
    assert found["forbidden"] == {}
    assert "at-least-once: 0 forbidden so far" in found["line"]


def test_an_acknowledged_record_never_read_is_lost(tmp_path):
    run = shutil.copytree(RUN, tmp_path / "run")
    _feed(run, drop=("idempotent-0", 5))
    found = live_at_drain(run)
    assert found["forbidden"] == {"idempotent": {"lost": 2}}  # at both levels
    assert "idempotent: 2 FORBIDDEN (2 lost)" in found["line"]
