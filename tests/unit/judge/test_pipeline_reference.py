"""A pipeline judged by the reference oracle from its run folder's files
(verifier.judge.pipeline_reference)."""

from __future__ import annotations

import pyarrow as pa

from verifier.judge import expectations as X
from verifier.judge.model import DUP_DELIVERY, FOREIGN, LOST
from verifier.judge.pipeline import PipelineSpec
from verifier.judge.pipeline_reference import judge_reference
from verifier.judge.reference import ORDER
from verifier.rundata.pipelines import PipelineLayout
from verifier.rundata.reference_runs import ReferenceLayout, write_info, write_rows


def spec(**kw) -> PipelineSpec:
    return PipelineSpec("orders", "pipeline:orders", "pipeline/exactly-once", "read_committed",
                        oracle="reference", **kw)


def rows(pairs) -> pa.Table:
    return pa.table({"customer": [c for c, _ in pairs], "total": [t for _, t in pairs],
                     ORDER: list(range(len(pairs)))})


def folder(tmp_path, faulted, ref, second=None, error=None) -> ReferenceLayout:
    lay = ReferenceLayout(PipelineLayout(tmp_path, "orders"))
    write_rows(lay.rows, rows(faulted))
    write_rows(lay.run_rows(1), rows(ref))
    write_rows(lay.run_rows(2), rows(second if second is not None else ref))
    write_info(lay, {"seconds": 1.5, **({"error": error} if error else {})})
    return lay


def test_upsert_equal_to_the_reference_has_no_anomaly(tmp_path):
    folder(tmp_path, [("a", 3), ("b", 1)], [("b", 1), ("a", 3)])
    out, counts = judge_reference(tmp_path, spec(key_columns=("customer",)))
    assert out.groups == [] and out.unjudged is None
    assert counts["observed"] == 2 and counts["reference"] == 2
    assert out.detail["compared"] == ["customer", "total"]


def test_append_replay_is_a_duplicate_forbidden_for_exactly_once(tmp_path):
    folder(tmp_path, [("a", 3), ("b", 1), ("b", 1)], [("a", 3), ("b", 1)])
    out, _ = judge_reference(tmp_path, spec())
    (g,) = out.groups
    assert (g.kind, g.count) == (DUP_DELIVERY, 1)
    assert g.sample[0]["row"] == {"customer": "b", "total": "1"}
    assert X.expectation("pipeline/exactly-once", "read_committed", g.kind) == X.FORBIDDEN
    assert X.expectation("pipeline/at-least-once", "read_committed", g.kind) == X.TOLERATED


def test_a_wrong_final_state_is_missing_and_foreign(tmp_path):
    folder(tmp_path, [("a", 4), ("b", 1)], [("a", 3), ("b", 1)])
    out, _ = judge_reference(tmp_path, spec())
    assert sorted((g.kind, g.count) for g in out.groups) == [(FOREIGN, 1), (LOST, 1)]
    keyed, _ = judge_reference(tmp_path, spec(key_columns=("customer",)))
    (g,) = keyed.groups
    assert g.kind == FOREIGN and g.sample[0]["reference"] == {"customer": "a", "total": "3"}


def test_a_failed_or_non_deterministic_reference_is_unjudged(tmp_path):
    folder(tmp_path, [("a", 3)], [("a", 3)], error="the query stopped")
    out, _ = judge_reference(tmp_path, spec())
    assert "reference run failed: the query stopped" in out.unjudged
    folder(tmp_path, [("a", 3)], [("a", 3), ("b", 1)], second=[("a", 3)])
    out, _ = judge_reference(tmp_path, spec())
    assert "not deterministic enough" in out.unjudged and out.groups == []


def test_the_report_prints_the_differing_rows():
    from verifier.report.differences import difference_lines

    col = {"name": "pipeline:orders", "oracle": {"keys": ["customer"], "varying": ["at"],
                                                 "ignored": [], "rows": {"faulted": 3,
                                                                         "reference": 2}},
           "anomalies": {DUP_DELIVERY: {"count": 1, "expectation": "forbidden", "sample": [
               {"row": {"customer": "b", "total": "1"},
                "evidence": {"difference": "extra: ...", "copies": 1, "in_output": 2,
                             "in_reference": 1}}]},
               LOST: {"count": 0, "expectation": "forbidden", "sample": []}}}
    text = "\n".join(difference_lines(col))
    assert "final state per key ['customer']" in text and "['at']" in text
    assert '{"customer":"b","total":"1"} x1 (written 2 times, by the fault-free run 1)' in text
    col["anomalies"][DUP_DELIVERY]["sample"][0]["evidence"].update(keys=["customer"],
                                                                   in_reference=0)
    assert ('{"customer":"b","total":"1"} x1 (written 2 times, an update once)'
            in "\n".join(difference_lines(col)))


def test_the_cell_counts_rows_for_the_reference_oracle():
    from verifier.report.compare import cells

    def doc(oracle):
        col = {"name": "pipeline:orders", "verdict": "FAIL", "exposure": None,
               "anomalies": {DUP_DELIVERY: {"count": 3, "expectation": "forbidden"}},
               **({"oracle": {"keys": []}} if oracle else {})}
        return {"scenario": "s", "run": "r", "columns": [col]}

    assert cells([doc(True)])["s"]["pipeline:orders"]["text"] == "FAIL · 3 extra rows x"
    assert cells([doc(False)])["s"]["pipeline:orders"]["text"] == "FAIL · 3 redelivered x"


def test_report_html_shows_the_comparison_and_the_differing_rows():
    from verifier.report.html import _samples

    extra = {"row": {"customer": "b", "total": "1"}, "reference": {"customer": "b",
                                                                   "total": "1"},
             "evidence": {"difference": "extra: ...", "copies": 1, "in_output": 2,
                          "in_reference": 1}}
    col = {"name": "pipeline:orders", "reasons": [],
           "oracle": {"keys": ["customer"], "varying": [], "ignored": [],
                      "rows": {"faulted": 3, "reference": 2}},
           "anomalies": {DUP_DELIVERY: {"count": 1, "expectation": "forbidden",
                                        "sample": [extra]}}}
    page = _samples({"columns": [col]})
    assert "compared with its fault-free run (final state per key" in page
    assert "{&quot;customer&quot;:&quot;b&quot;,&quot;total&quot;:&quot;1&quot;}" in page
    assert "x1 (written 2 times, by the fault-free run 1)" in page
    assert "identity (pid:p:seq)" not in page
