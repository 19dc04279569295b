"""A user's records as the generator sends them (producers.user_records) and as the plain
reader names them (streaming.plain_reader.identity_of)."""

from __future__ import annotations

from types import SimpleNamespace

import orjson

from producers.user_records import RecordMaker, load_make_record
from streaming.observations import decode_row
from streaming.plain_reader import identity_of
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
