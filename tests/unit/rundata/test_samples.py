"""A file of sample records the tool varies (verifier.rundata.samples, through the
pipeline file's SAMPLES and VARY): its format, the varying rule, each refusal."""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import pytest

from verifier.rundata.pipeline_file import PipelineFileError, encode_record, read_contract

LINES = [
    '{"order_id": 1001, "customer": "c-a", "amount_cents": 250}',
    '',  # blank lines are skipped
    '{"key": "c-b", "value": {"order_id": 1002, "customer": "c-b", "amount_cents": 99},'
    ' "headers": {"source": "pos"}, "timestamp": 1767225600000}',
    '{"key": "c-c", "value": {"order_id": "A-7", "customer": "c-c", "amount_cents": 5},'
    ' "timestamp": 1767225660000}',
]


def pipeline_file(tmp_path, lines=LINES, **names):
    (tmp_path / "orders.jsonl").write_text("\n".join(lines) + "\n")
    names = {"INPUT": {"orders": 3}, "SAMPLES": "orders.jsonl", "ORACLE": "reference",
             "__file__": str(tmp_path / "p.py"), **names}
    return SimpleNamespace(**names)


def test_record_i_is_sample_i_mod_n_varied(tmp_path):
    make = read_contract(pipeline_file(tmp_path, VARY=["order_id"]), "p.py").make_record
    # a value line is the value itself; its VARY integer becomes i
    assert make("orders", 0) == {"order_id": 0, "customer": "c-a", "amount_cents": 250}
    assert make("orders", 3) == {"order_id": 3, "customer": "c-a", "amount_cents": 250}
    # an envelope keeps its key and headers; its timestamp moves one span per round
    # (span: the samples' latest - earliest + 1 ms = 60001 ms)
    r1, r4 = make("orders", 1), make("orders", 4)
    assert (r1["key"], r1["headers"], r1["timestamp"]) == ("c-b", {"source": "pos"},
                                                            1767225600000)
    assert r4["timestamp"] == 1767225600000 + 60001 and r4["value"]["order_id"] == 4
    # a VARY string gets -i appended
    assert make("orders", 5)["value"]["order_id"] == "A-7-5"
    assert make("orders", 2)["timestamp"] == 1767225660000
    # the same i, the same record (a producer's re-send depends on it), all distinct
    assert make("orders", 4) == make("orders", 4)
    ids = [orjson.loads(encode_record(make("orders", i)).value)["order_id"]
           for i in range(300)]
    assert len(set(map(str, ids))) == 300
    # and making records never changes the samples: record 5 is still what it was
    assert make("orders", 5)["value"]["order_id"] == "A-7-5"


def test_without_vary_the_values_repeat_and_the_file_is_not_changed(tmp_path):
    make = read_contract(pipeline_file(tmp_path), "p.py").make_record
    assert make("orders", 3) == make("orders", 0) == orjson.loads(LINES[0])
    assert make("orders", 1)["value"] == orjson.loads(LINES[2])["value"]
    assert orjson.loads(LINES[2])["value"]["order_id"] == 1002  # never changed in place
    make("orders", 7)
    assert make("orders", 1)["value"]["order_id"] == 1002


def test_samples_per_topic_and_a_json_string_line(tmp_path):
    (tmp_path / "words.jsonl").write_text('"the quick fox"\n')
    mod = pipeline_file(tmp_path, INPUT={"orders": 3, "lines": 1},
                        SAMPLES={"orders": "orders.jsonl", "lines": "words.jsonl"})
    make = read_contract(mod, "p.py").make_record
    assert encode_record(make("lines", 9)).value == b"the quick fox"
    assert make("orders", 0)["order_id"] == 1001


@pytest.mark.parametrize(("lines", "names", "says"), [
    ([], {}, "holds no record"),
    (["", "  "], {}, "holds no record"),
    (['{"order_id": 1}', '{"order_id": 2'], {}, "orders.jsonl:2: not JSON"),
    (['42'], {}, "orders.jsonl:1: a record is a JSON object"),
    (['{"value": {"a": 1}, "timestamp": -3}'], {}, "orders.jsonl:1's timestamp"),
    (['{"order_id": 1}', '{"customer": "x"}'], {"VARY": ["order_id"]},
     "orders.jsonl:2: VARY field 'order_id' is not in this sample's value"),
    (['{"order_id": 1.5}'], {"VARY": ["order_id"]}, "an integer or a string"),
    (['"text"'], {"VARY": ["order_id"]}, "orders.jsonl:1: VARY field 'order_id' is not in"),
    (['{"order_id": 1}'], {"VARY": "order_id"}, "VARY must be a list"),
    (['{"order_id": 1}'], {"make_record": lambda t, i: {}}, "both SAMPLES and make_record"),
    (['{"order_id": 1}'], {"INPUT": None}, "SAMPLES is set but INPUT is not"),
    (['{"order_id": 1}'], {"SAMPLES": 3}, "SAMPLES must be a file name"),
    (['{"order_id": 1}'], {"SAMPLES": {"other": "orders.jsonl"}}, "each INPUT topic"),
    (['{"order_id": 1}'], {"SAMPLES": "missing.jsonl"}, "missing.jsonl cannot be read"),
    (['{"order_id": 1}'], {"SAMPLES": None, "VARY": ["order_id"]}, "SAMPLES is not set"),
])  # fmt: skip
def test_refusals_name_the_file_and_line(tmp_path, lines, names, says):
    with pytest.raises(PipelineFileError) as err:
        read_contract(pipeline_file(tmp_path, lines, **names), "p.py")
    assert says in str(err.value) and str(err.value).startswith("p.py: ")
    assert err.value.exit_code == 64


def test_a_file_not_utf8_is_refused(tmp_path):
    mod = pipeline_file(tmp_path)
    (tmp_path / "orders.jsonl").write_bytes(b'{"a": "\xff"}\n')
    with pytest.raises(PipelineFileError, match="cannot be read: UnicodeDecodeError"):
        read_contract(mod, "p.py")
