"""A user's records as the generator sends them (producers.user_records) and as the plain
reader names them (streaming.plain_reader.identity_of), with the identity in a field of
the value (ID_FIELD) as the read-back decodes it (streaming.pipelines.readback)."""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import pytest

from producers.user_records import RecordMaker, load_make_record, load_records
from streaming.observations import decode_row
from streaming.pipelines.readback import decode_values
from streaming.plain_reader import identity_of
from verifier.rundata.errors import UsageError
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.pipeline_file import ID_HEADER
from verifier.rundata.records import encode_values

ORDERS = str(PROJECT_ROOT / "examples" / "pipelines" / "orders.py")


def test_record_p_seq_is_make_record_i_with_the_identity_in_a_header():
    maker = RecordMaker(load_make_record(ORDERS), "orders", 3)
    (ident,) = encode_values("r1", "in-orders-0", 1, [(2, 5)], None, False, 7)
    sent = []
    maker.send(lambda *a, **kw: sent.append((a, kw)), "r1.in.orders", 2, 5, ident)
    (topic, value, key), kw = sent[0]
    assert topic == "r1.in.orders" and key == b"customer-17"  # i = 5 * 3 + 2 = 17
    assert orjson.loads(value)["order_id"] == 17
    assert kw["partition"] == 2 and kw["headers"] == [(ID_HEADER, ident)]
    # what the readers decode: the header, not the user's value
    message = SimpleNamespace(value=value, headers=kw["headers"])
    row = decode_row("r1", identity_of(message))
    assert (row["foreign"], row["pid"], row["p"], row["seq"]) == (False, "in-orders-0", 2, 5)
    assert identity_of(SimpleNamespace(value=b"v", headers=[])) == b"v"


def _samples_file(tmp_path, oracle_lines: str):
    (tmp_path / "orders.jsonl").write_text(
        '{"key": "c-1", "value": {"order_id": 10, "customer": "c-1"}}\n'
        '{"order_id": 11, "customer": "c-2"}\n')
    path = tmp_path / "orders_job.py"
    path.write_text('INPUT = {"orders": 2}\nSAMPLES = "orders.jsonl"\nVARY = ["order_id"]\n'
                    'ID_FIELD = "verifier_id"\n' + oracle_lines +
                    "def build(spark, source):\n    return None\n")
    return str(path)


def test_samples_with_the_identity_in_a_field_of_the_value(tmp_path):
    """The producer writes the identity into ID_FIELD (the header stays); the read-back
    decodes it from the output column that carries the field, or from the whole value."""
    spec = _samples_file(tmp_path, 'TRACE_COLUMN = "verifier_id"\n')
    contract = load_records(spec)
    maker = RecordMaker(contract.make_record, "orders", 2, contract.id_field)
    (ident,) = encode_values("r1", "in-orders-0", 1, [(1, 3)], None, False, 7)
    sent = []
    maker.send(lambda *a, **kw: sent.append((a, kw)), "r1.in.orders", 1, 3, ident)
    (_, value, key), kw = sent[0]
    record = orjson.loads(value)  # i = 3 * 2 + 1 = 7: sample 1, order_id varied to 7
    assert key is None and record["order_id"] == 7 and record["customer"] == "c-2"
    assert record["verifier_id"] == ident.decode()
    assert kw["headers"] == [(ID_HEADER, ident)]
    # a re-send of (1, 3) sends the same record
    maker.send(lambda *a, **kw: sent.append((a, kw)), "r1.in.orders", 1, 3, ident)
    assert sent[1][0][1] == value
    # the judge's decode: the field as its own column (get_json_object, or from_json with
    # a string field), and the whole value written on (a Kafka sink, a value column)
    rows = decode_values("r1", [record["verifier_id"], value, b'{"verifier_id": 3}'],
                         id_field="verifier_id").to_pylist()
    assert [(r["foreign"], r["pid"], r["p"], r["seq"]) for r in rows[:2]] == [
        (False, "in-orders-0", 1, 3)] * 2
    assert rows[2]["foreign"]  # a field that holds no identity stays foreign
    # without ID_FIELD the whole value is the user's: foreign, as before
    assert decode_values("r1", [value]).to_pylist()[0]["foreign"]


def test_a_samples_file_that_cannot_carry_the_field_is_refused_at_its_line(tmp_path):
    spec = _samples_file(tmp_path, 'ORACLE = "reference"\n')
    with open(tmp_path / "orders.jsonl", "a") as f:
        f.write('"plain text"\n')
    with pytest.raises(UsageError, match=r"orders.jsonl:3: ID_FIELD = 'verifier_id' needs"):
        load_records(spec)


def test_the_samples_example_varies_its_file():
    contract = load_records(str(PROJECT_ROOT / "examples" / "pipelines" /
                                "orders_from_samples.py"))
    r0, r5 = contract.encode("orders", 0, b"I0"), contract.encode("orders", 5, b"I5")
    assert (r0.key, r5.key) == (b"customer-01", b"customer-01")  # sample 0, rounds 0 and 1
    assert r5.timestamp_ms - r0.timestamp_ms == 10_000  # the file's span: 9999 ms + 1
    assert orjson.loads(r5.value) == {"order_id": 5, "customer": "customer-01",
                                      "amount_cents": 1250, "currency": "EUR",
                                      "verifier_id": "I5"}
    assert contract.encode("orders", 2).headers == (("channel", b"web"),)
