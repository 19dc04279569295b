"""Evidence as a sentence: one hand-written evidence object per kind and shape (the keys
the checks write, verifier/judge/definitions and verifier/judge/pipeline.py), and the run
report showing the sentence instead of the JSON."""

from __future__ import annotations

import json
from pathlib import Path

from verifier.report.evidence import evidence_text
from verifier.report.html import render_html

FIXTURE = Path(__file__).parent / "fixtures" / "matrix.json"


def test_reorder_names_the_higher_sequence_and_where_it_was_read():
    ev = {"higher_seq": 594, "higher_seq_offset": 553}
    assert evidence_text("reorder", ev) == "seq 594 was read at offset 553, before this record"
    # the same evidence as the JSON text the live checks write
    assert evidence_text("reorder", json.dumps(ev)) == evidence_text("reorder", ev)


def test_duplicate_from_the_batch_checks_counts_copies_and_sessions():
    ev = {"copies": 2, "sessions": 1, "first_offset": 500, "last_offset": 507}
    assert evidence_text("duplicate-same-session", ev) == (
        "2 copies from 1 producer session; the first at offset 500, the last at 507")


def test_duplicate_from_the_live_checks_names_this_copy():
    assert evidence_text("duplicate-cross-session", {"sessions": 2, "this_copy": 811}) == (
        "copies from 2 producer sessions; this copy at offset 811")
    assert evidence_text("duplicate-same-session", {"sessions": 1, "this_copy": 559}) == (
        "a repeat within one producer session; this copy at offset 559")


def test_redelivery_by_a_reader_says_how_often():
    assert evidence_text("duplicate-delivery", {"deliveries": 3}) == (
        "this offset was delivered 3 times")


def test_lost_says_what_was_acknowledged_and_who_found_it():
    ev = {"acknowledged": True, "acked_offset": 4411, "transactional": False,
          "in_log": True, "seen_by": "plain@read_uncommitted"}
    assert evidence_text("lost", ev) == (
        "acknowledged at offset 4411; in the log (read by plain@read_uncommitted), "
        "but not at this level")
    assert evidence_text("unseen", {"acknowledged": False, "transactional": True,
                                    "in_log": False}) == (
        "never acknowledged; sent in a transaction; no reader found it in the log")


def test_a_pipeline_record_compares_input_and_output():
    ev = {"in_log": 1, "in_output": 2, "offsets": [77], "read_by_batches": [3, 4],
          "output_batches": [3, 4]}
    assert evidence_text("duplicate-delivery", ev) == (
        "1 copy in the input log (offset 77), 2 in the output; read by batch 3, 4; "
        "written by batch 3, 4")
    lost = {"in_log": 1, "in_output": 0, "offsets": [78], "read_by_batches": [],
            "position": 120}
    assert evidence_text("lost", lost) == (
        "1 copy in the input log (offset 78), 0 in the output; "
        "the pipeline had read its partition up to offset 120")


def test_aborted_read_names_the_transaction_outcome():
    assert evidence_text("aborted-read", {"txn_status": "aborted", "abort_intent": False}) == (
        "its transaction was aborted; the producer did not mean to abort it")
    assert evidence_text("aborted-read", {"txn_status": "abort intended",
                                          "abort_intent": True}) == (
        "its transaction was meant to abort")


def test_torn_hanging_inconsistent_and_foreign():
    assert evidence_text("torn-transaction", {"records": 10, "visible": 4, "partitions": 3}) \
        == "4 of the transaction's 10 records were read (it spans 3 partitions)"
    assert evidence_text("hanging-transaction", {"end_read_committed": 120,
                                                 "end_read_uncommitted": 180}) == (
        "read_committed ends at offset 120, read_uncommitted at 180: an open transaction "
        "holds it back")
    seen = {"spark/read_committed": "p-0:0:7 ses 1 txn None sent 1",
            "spark/read_uncommitted": "undecodable"}
    assert evidence_text("inconsistent-offset", {"seen": seen, "foreign_seen": True,
                                                 "one": {}, "other": {}}) == (
        "spark/read_committed read p-0:0:7 ses 1 txn None sent 1; "
        "spark/read_uncommitted read undecodable; one of them could not decode it")
    names = {"pid": "idempotent-0", "p": 2, "seq": 9, "ses": 1, "txn": None}
    assert evidence_text("foreign-record", {"names": names, "home": {
        "topic": "t.idempotent", "partition": 2}, "error": "in the wrong partition"}) == (
        "it names idempotent-0:2:9, whose home is t.idempotent[2]; in the wrong partition")


def test_keys_no_sentence_uses_are_kept_and_empty_evidence_is_empty():
    assert evidence_text("reorder", {"higher_seq": 5, "extra": [1]}) == (
        "seq 5 was read, before this record; extra [1]")
    assert evidence_text("some-new-kind", {"a": 1}) == "a 1"
    assert evidence_text("lost", {}) == "" and evidence_text("lost", None) == ""


def test_run_report_shows_sentences_not_json():
    doc = json.loads(FIXTURE.read_text())["runs"][3]
    col = next(c for c in doc["columns"] if c["anomalies"]["duplicate-same-session"]["count"])
    col["anomalies"]["reorder"] = {**col["anomalies"]["duplicate-same-session"],
                                   "sample": [{**col["anomalies"]["duplicate-same-session"][
                                       "sample"][0], "kind": "reorder", "evidence": {
                                       "higher_seq": 594, "higher_seq_offset": 553}}]}
    page = render_html(doc)
    assert "seq 594 was read at offset 553, before this record" in page
    assert "higher_seq" not in page and "{&quot;" not in page


def test_no_report_names_a_path_outside_its_run_folder():
    """A report is handed to reviewers: its sources are cited by title, never by a path
    of the development checkout (``../shared/...``)."""
    from verifier.report.compare import MECHANISM
    from verifier.report.matrix import matrix_html

    matrix = json.loads(FIXTURE.read_text())
    pages = [render_html(r) for r in matrix["runs"]]
    pages.append(matrix_html(matrix["grid"], matrix["runs"], Path("runs"), matrix["workloads"]))
    for page in pages:
        assert "../" not in page and "shared/" not in page
    for _title, _text, source in MECHANISM.values():
        assert "/" not in source, source
