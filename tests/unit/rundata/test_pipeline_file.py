"""The pipeline file's names (verifier.rundata.pipeline_file): each refusal, each form."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import orjson
import pytest

from verifier.rundata.pipeline_file import (
    ID_HEADER,
    PipelineFileError,
    encode_record,
    input_topic,
    read_contract,
    record_index,
)


def module(**names):
    return SimpleNamespace(**names)


def orders(topic, i):
    return {"order_id": i, "customer": f"c{i % 7}", "amount": 1.5 * i}


def test_defaults_are_the_tools_records_by_identity():
    c = read_contract(module(), "p.py")
    assert (c.inputs, c.oracle, c.trace_column, c.key_columns) == ({}, "identity", "value", ())


def test_reference_oracle_with_input():
    c = read_contract(module(INPUT={"orders": 3}, make_record=orders, ORACLE="reference",
                             KEY_COLUMNS=["customer"], IGNORE_COLUMNS=["at"]), "p.py")
    assert c.inputs == {"orders": 3} and c.key_columns == ("customer",)
    assert c.to_json()["ignore_columns"] == ["at"]


def test_value_column_is_the_older_trace_column():
    assert read_contract(module(VALUE_COLUMN="v"), "p.py").trace_column == "v"


@pytest.mark.parametrize(("names", "says"), [
    ({"INPUT": {"orders": 3}}, "no make_record"),
    ({"make_record": orders}, "INPUT is not"),
    ({"INPUT": ["orders"], "make_record": orders}, "INPUT must be a dict"),
    ({"INPUT": {"or ders": 3}, "make_record": orders}, "INPUT topic"),
    ({"INPUT": {"orders": 0}, "make_record": orders}, "partition count"),
    ({"INPUT": {"orders": True}, "make_record": orders}, "partition count"),
    ({"INPUT": {"orders": 1}, "make_record": lambda topic: {}}, "(topic, i)"),
    ({"INPUT": {"orders": 1}, "make_record": lambda t, i: 1 / 0}, "ZeroDivisionError"),
    ({"INPUT": {"orders": 1}, "make_record": lambda t, i: 42}, "returned int"),
    ({"INPUT": {"orders": 1}, "make_record": orders}, "needs TRACE_COLUMN"),
    ({"ORACLE": "differential"}, "ORACLE = 'differential'"),
    ({"KEY_COLUMNS": ["k"]}, "belong to ORACLE = \"reference\""),
    ({"ORACLE": "reference", "TRACE_COLUMN": "v"}, "TRACE_COLUMN belongs"),
    ({"ORACLE": "reference", "KEY_COLUMNS": "k"}, "list of column names"),
    ({"ORACLE": "reference", "KEY_COLUMNS": ["k"], "IGNORE_COLUMNS": ["k"]}, "both in"),
])  # fmt: skip
def test_refusals_say_what_is_wrong(names, says):
    with pytest.raises(PipelineFileError, match=None) as err:
        read_contract(module(**names), "p.py")
    assert says in str(err.value) and str(err.value).startswith("p.py")


def test_record_forms():
    assert encode_record({"a": 1}).value == b'{"a":1}'
    assert encode_record(b"\x00raw").value == b"\x00raw"
    assert encode_record("text").value == b"text"
    r = encode_record({"key": "k1", "value": {"n": 2}, "headers": {"h": "x"},
                       "timestamp": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})
    assert (r.key, orjson.loads(r.value), r.headers) == (b"k1", {"n": 2}, (("h", b"x"),))
    assert r.timestamp_ms == 1767225600000
    assert encode_record({"value": None, "key": b"k"}).value is None  # a tombstone
    # a JSON value with a field named value and others is a value, not an envelope
    assert orjson.loads(encode_record({"value": 3, "sku": "x"}).value) == {"value": 3,
                                                                            "sku": "x"}


def test_record_refusals():
    with pytest.raises(PipelineFileError, match="the tool's"):
        encode_record({"value": b"v", "headers": [(ID_HEADER, b"x")]})
    with pytest.raises(PipelineFileError, match="timestamp"):
        encode_record({"value": b"v", "timestamp": -5})
    with pytest.raises(PipelineFileError, match="headers"):
        encode_record({"value": b"v", "headers": [1, 2]})


def test_names_on_the_cluster_and_record_numbers():
    assert input_topic("r-1", "orders") == "r-1.in.orders"
    # record i goes to partition i mod n, and every i is made once
    seen = {record_index(p, seq, 3) for p in range(3) for seq in range(4)}
    assert seen == set(range(12)) and record_index(2, 1, 3) % 3 == 2


def test_id_field_goes_into_the_json_value_of_every_form():
    ident = b'{"v":1,"run":"r1","pid":"in-orders-0","ses":1,"p":0,"seq":0}'
    got = encode_record({"key": "k", "value": {"n": 1}}, "m", "verifier_id", ident)
    assert got.key == b"k"
    assert orjson.loads(got.value) == {"n": 1, "verifier_id": ident.decode()}
    # a value given as JSON text is a JSON object too
    assert orjson.loads(encode_record(b'{"n": 2}', "m", "vid", ident).value)["vid"] == \
        ident.decode()
    assert encode_record({"n": 1}, "m").value == b'{"n":1}'  # no ID_FIELD: as it is


@pytest.mark.parametrize(("record", "says"), [
    (b"\x00raw", "needs a JSON object value"),
    ("[1, 2]", "needs a JSON object value"),
    ({"value": None}, "needs a JSON object value"),
    ({"n": 1, "verifier_id": 5}, "already has a field 'verifier_id'"),
])  # fmt: skip
def test_id_field_refusals(record, says):
    with pytest.raises(PipelineFileError, match=None) as err:
        encode_record(record, "m", "verifier_id", b"{}")
    assert says in str(err.value)


@pytest.mark.parametrize(("names", "says"), [
    ({"ID_FIELD": "vid"}, "ID_FIELD writes each record's identity into your own records"),
    ({"INPUT": {"o": 1}, "make_record": orders, "ORACLE": "reference", "ID_FIELD": "a.b"},
     "ID_FIELD = 'a.b'"),
    ({"INPUT": {"o": 1}, "make_record": lambda t, i: b"raw", "ORACLE": "reference",
      "ID_FIELD": "vid"}, "make_record('o', 0): ID_FIELD = 'vid' needs a JSON object"),
    ({"INPUT": {"o": 1}, "make_record": orders, "ORACLE": "reference",
      "ID_FIELD": "order_id"}, "make_record('o', 0): the value already has a field"),
    ({"INPUT": {"o": 1}, "make_record": orders, "ID_FIELD": "vid"},
     "needs TRACE_COLUMN, the output column holding each record's identity: the value's "
     "field 'vid' (ID_FIELD)"),
    ({"TRACE_COLUMN": "a", "VALUE_COLUMN": "b"}, "disagree"),
    ({"ORACLE": "reference", "VALUE_COLUMN": "v"}, "VALUE_COLUMN belongs to ORACLE"),
    ({"TRACE_COLUMN": ""}, "TRACE_COLUMN must be a column name"),
])  # fmt: skip
def test_id_field_and_trace_column_refusals(names, says):
    with pytest.raises(PipelineFileError, match=None) as err:
        read_contract(module(**names), "p.py")
    assert says in str(err.value) and str(err.value).startswith("p.py")


def test_id_field_with_the_identity_oracle():
    c = read_contract(module(INPUT={"o": 1}, make_record=orders, ID_FIELD="vid",
                             TRACE_COLUMN="vid"), "p.py")
    assert (c.id_field, c.trace_column, c.to_json()["id_field"]) == ("vid", "vid", "vid")
    assert orjson.loads(c.encode("o", 3, b"ID").value) == {**orders("o", 3), "vid": "ID"}
    assert "id_field" not in read_contract(module(), "p.py").to_json()
