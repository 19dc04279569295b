"""One reading of a run's fault windows (verifier.judge.faults.windows) for the verdict
document, the exposure and the start outcomes, and one rule for which columns a fault
concerns (verifier.judge.faults) for both the exposure and the UNKNOWN of an unknown
start. Hand-written nemesis histories."""

from __future__ import annotations

from types import SimpleNamespace as NS

from verifier.judge import faults as F
from verifier.judge.faults.windows import fault_kinds, fault_windows, windows


def op(kind, f, fid, t, outcome="ok", target=None, **more):
    return {"type": outcome, "f": f, "fault": kind, "target": target or {"node": 1},
            "id": fid, "t": t, **more}


HISTORY = [
    {"type": "header", "format": "nemesis"},
    {**op("broker-kill", "start", 1, 100), "type": "invoke"},
    op("broker-kill", "start", 1, 110, detail={"leads": [["t", 0]]}),
    op("producer-kill", "start", 2, 120, "fail", {"process": "gen-0"},
       error="process 'gen-0' is not running"),
    {"type": "event", "f": "hold", "fault": "hold", "target": {"all": True}, "id": 3,
     "t": 125, "detail": {"hold": 1}},
    op("broker-kill", "heal", 1, 150, detail={"node": 1}),
    op("all", "heal", 0, 200, target={}),
]


def test_the_document_keeps_a_failed_start_the_exposure_finds_it_not_applied():
    assert fault_windows(HISTORY) == [
        {"id": 1, "fault": "broker-kill", "target": {"node": 1}, "start": 110, "end": 150,
         "start_outcome": "ok", "heal_outcome": "ok"},
        {"id": 2, "fault": "producer-kill", "target": {"process": "gen-0"}, "start": 120,
         "end": None, "start_outcome": "fail"}]
    kill, failed = windows(HISTORY)  # the hold's events alone and the heal-all make none
    assert (kill.start, kill.end, kill.start_detail) == (110, 150, {"leads": [["t", 0]]})
    assert (failed.tried, failed.start, failed.error) == (120, None,
                                                          "process 'gen-0' is not running")
    assert F.acted_on(failed, NS(pids=()), None) == (0, "not applied")
    assert fault_kinds(HISTORY) == {"broker-kill"}


PLAIN = NS(mode="at-least-once")
CONFIG = NS(producers={"alo-0": PLAIN, "tx-0": NS(mode="transactional")},
            pipelines={"delta": NS(label="pipeline:delta")})


def unknown(kind, target):
    return [op(kind, "start", 4, 100, "info", target, error="ProcessError: boom")]


def test_an_unknown_start_leaves_open_only_the_columns_its_fault_concerns():
    """The columns UNKNOWN for a start of unknown outcome are those the fault's family
    concerns, as for its exposure: an observer kill, a broker fault or a proxy rule the
    producer columns; retention and a pipeline's kill that pipeline; a generator named
    by mode and client (``producer:<mode>/<client>``) its mode's column."""
    def open_for(kind, target):
        return {m for m in ("at-least-once", "transactional", "pipeline:delta")
                if F.unknown_outcomes(unknown(kind, target), CONFIG, m)}

    assert open_for("observer-kill", {"process": "observer"}) == {"at-least-once",
                                                                  "transactional"}
    assert open_for("broker-kill", {"node": 1}) == {"at-least-once", "transactional"}
    assert open_for("ack-loss", {"all": True}) == {"at-least-once", "transactional"}
    assert open_for("retention", {"all": True}) == {"pipeline:delta"}
    assert open_for("process-kill", {"process": "pipeline/delta"}) == {"pipeline:delta"}
    assert open_for("producer-kill", {"process": "producer:transactional/java"}) == {
        "transactional"}
    assert open_for("process-pause", {"process": "alo-0"}) == {"at-least-once"}
    assert F.unknown_outcomes(unknown("broker-kill", {"node": 1}), CONFIG,
                              "at-least-once") == [
        "fault broker-kill #4 may not have been applied: ProcessError: boom"]


def test_a_kind_no_family_knows_concerns_no_column():
    """A history from a newer tool with a kind this one does not know: no column is
    concerned (and its exposure is not counted), rather than a crash."""
    w, = windows([op("disk-full", "start", 1, 10), op("disk-full", "heal", 1, 20)])
    col = F.column_of(CONFIG, "at-least-once")
    assert col.pids == ("alo-0",) and col.pipeline is None
    assert F.column_of(CONFIG, "pipeline:delta").pipeline == "delta"
    assert not F.concerns(w, col, {"alo-0": "at-least-once"})
    assert F.acted_on(w, col, None) == (None, "no exposure rule for disk-full")
