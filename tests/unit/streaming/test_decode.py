"""The driver-side decoder (streaming.decode), value by value, without a JVM.

The values here are also decoded by Spark's ``from_json`` (the decoding the observer used
before streaming.decode) in tests/integration/streaming/test_decode_spark.py, which must
give the same rows column for column.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from streaming.decode import (
    TEMPLATE,
    decode_batch,
    decode_value,
)
from verifier.rundata.records import (
    RecordIdentity,
    encode_value,
    encode_values,
)

RUN = "run-1"
STAMP = dt.datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=dt.UTC)
H = b'{"v":1,"run":"run-1","pid":"x","ses":1,"p":0,"seq":5'
T = b'"ts":7'

VALUES = [
    encode_value(RecordIdentity(RUN, "txn-0", 1, 0, 3, 2, True, 1000)),
    encode_value(RecordIdentity(RUN, "plain-0", 2, 1, 4, None, False, 2000), size=300),
    encode_value(RecordIdentity("run-0", "plain-0", 1, 0, 0, None, False, 3000)),
    b'{"v":1,"run":"run-1","pid":"x","ses":1,"p":0,"seq":1,"ts":5}',  # no txn, no abort
    b"not json",
    b"[1,2,3]",
    b'{"v":2,"run":"run-1"}',
    b'{"v":1,"run":"run-1","pid":"x"}',
    None,
]

#: What Spark made of odd values (Spark 4.0 defaults), each a case of the rules in
#: streaming.decode's docstring.
ODD = [
    H + b"," + T + b"}", H + b"," + T + b',"pad":"xx"}', H + b"," + T + b"} trailing",
    H + b"," + T + b"}}", b" \n" + H + b"," + T + b"}\n", b"[" + H + b"," + T + b"}]",
    b'"str"', b"1", b"null", b"", b"  ", b"{}", b'{"v":1}', b"{'v':1}", b'{"v":1,}',
    b'{"v":"1","run":"run-1"}', b'{"v":1.0}', b'{"v":null}', b'{"v":-1}', b'{"v":01}',
    H + b',"ses":"1",' + T + b"}", H + b',"ses":1.5,' + T + b"}",
    H + b',"ses":2147483648,' + T + b"}", H + b',"ses":2147483647,' + T + b"}",
    H + b',"seq":9223372036854775808,' + T + b"}", H + b',"seq":-9223372036854775808,' + T + b"}",
    H + b',"ses":2,' + T + b"}", H + b',"seq":"bad",' + T + b"}",
    H + b',"SES":2,"Run":"q",' + T + b"}", H + b',"":1,' + T + b"}",
    H + b',"abort":"true",' + T + b"}", H + b',"abort":1,' + T + b"}",
    H + b',"abort":null,' + T + b"}", H + b',"abort":true,"txn":4,' + T + b"}",
    H + b',"abort":true,"abort":null,' + T + b"}", H + b',"txn":"3",' + T + b"}",
    H + b',"txn":3.0,' + T + b"}", H + b',"ts":1.0E3}', H + b',"ts":-0}', H + b',"ts":-7}',
    H + b"," + T + b',"pad":NaN}', H + b"," + T + b',"pad":-Infinity}',
    H + b"," + T + b',"pad":+INF}', H + b"," + T + b',"pad":Inf}',
    H + b"," + T + b',"pad":1e999}', H + b"," + T + b',"pad":[1,{"a":2}]}',
    H + b"," + T + b" /* c */}", H + b"," + T + b',"pad":"a\tb"}',
    H + b"," + T + b',"pad":"\\q"}', H + b"," + T + b',"pad":\'it\\\'s\'}',
    H + b"," + T + b',"pad":truex}', H + b"," + T + b',"pad":1.}', H + b"," + T + b',"pad":.5}',
    H + b"," + T + b',"pad":1e}', H + b"," + T + b',"pad":-}', H + b"," + T + b',"pad":+1}',
    b"{'v':1,'run':'run-1','pid':'x','ses':1,'p':0,'seq':5,'ts':7}",
    b'{"v":1,"run":"run-1","pid":"x\\u0041\\n\\"\\/","ses":1,"p":0,"seq":5,"ts":7}',
    b'{"v":1,"run":"run-1","pid":"\\ud83d\\ude00 \\ud800","ses":1,"p":0,"seq":5,"ts":7}',
    b'{"v":1,"run":"run-1","pid":"x\xff\xc3","ses":1,"p":0,"seq":5,"ts":7}',
    b'{"v":1,"run":"run-1","pid":"caf\xc3\xa9","ses":1,"p":0,"seq":5,"ts":7}',
    b'{"v":1,"run":"run-\xc3\xa9","pid":"x","ses":1,"p":0,"seq":5,"ts":7}',
    b'{"v":1,"run":"other","pid":"x","ses":1,"p":0,"seq":5,"ts":7}',
    b'{"v":1,"run":null,"pid":"x","ses":1,"p":0,"seq":5,"ts":7}',
    b'{"v":1,"run":5,"pid":"x","ses":1,"p":0,"seq":5,"ts":7}',
    *[b'{"v":1,"run":"run-1","pid":' + p + b',"ses":1,"p":0,"seq":5,"ts":7}' for p in (
        b"5", b"-0", b"1.50", b"1e20", b"1E+2", b"0.0001", b"0.001", b"12345678.9",
        b"1234567.0", b"-0.0", b"true", b"NaN", b"-Infinity", b"123456789012345678901234567890",
        b'{"a": [1, "b\\n\\u0001", null, 2.5e3, {}], "c\\"": []}', b"[]",
    )],
    encode_values(RUN, "idempotent-0", 3, [(2, 10**12)], 10**15, True, 10**17, 400)[0],
    encode_values(RUN, "p", 1, [(-1, -5)], -3, False, -9, 0)[0],
    encode_values(RUN, "p", 1, [(0, 5)], None, False, 7, 20)[0],  # pad "" (size too small)
]  # fmt: skip


@pytest.mark.parametrize("size", [0, 1, 60, 61, 62, 200])
def test_template_values_decode_in_bulk_as_one_by_one(size):
    """The generators' values take the bulk path, with the rows the general one gives."""
    values = []
    for run, pid, ses, txn, abort, ts in [(RUN, "idempotent-0", 1, None, False, 1),
                                          (RUN, "transactional-1", 7, 12, True, 1795314893744),
                                          ("run-0", "at-least-once-0", 2, 0, False, 0)]:
        values += encode_values(run, pid, ses, [(p, s) for p in range(3) for s in (0, 9, 10**6)],
                                txn, abort, ts, size)
    n = len(values)
    raw = pa.table({"topic": ["t"] * n, "partition": pa.array([0] * n, pa.int32()),
                    "offset": pa.array(range(n), pa.int64()),
                    "ts_broker": pa.array([5] * n, pa.int64()),
                    "value": pa.array(values, pa.binary())})
    assert pc.all(pc.match_substring_regex(raw.column("value"), TEMPLATE)).as_py()
    rows = decode_batch(raw, RUN, "read_uncommitted").to_pylist()
    for row, value in zip(rows, values, strict=True):
        assert {k: row[k] for k in decode_value(value, RUN)} == decode_value(value, RUN)
    assert sum(r["foreign"] for r in rows) == len(values) // 3


def test_records_larger_than_the_json_readers_default_block():
    values = encode_values(RUN, "p", 1, [(0, i) for i in range(3)], None, False, 5, 3_000_000)
    raw = pa.table({"topic": ["t"] * 3, "partition": pa.array([0] * 3, pa.int32()),
                    "offset": pa.array(range(3), pa.int64()),
                    "ts_broker": pa.array([1] * 3, pa.int64()),
                    "value": pa.array(values, pa.binary())})  # fmt: skip
    rows = decode_batch(raw, RUN, "read_committed").to_pylist()
    assert [(r["seq"], r["error"]) for r in rows] == [(0, None), (1, None), (2, None)]


def test_mixed_batch_keeps_row_order():
    values = [encode_value(RecordIdentity(RUN, "x", 1, 0, i, None, False, 7)) if i % 3 else
              (None if i % 2 else b"junk") for i in range(30)]
    raw = pa.table({"topic": ["t"] * 30, "partition": pa.array([1] * 30, pa.int32()),
                    "offset": pa.array(range(30), pa.int64()),
                    "ts_broker": pa.array(range(30), pa.int64()),
                    "value": pa.array(values, pa.binary())})  # fmt: skip
    rows = decode_batch(raw, RUN, "read_committed").to_pylist()
    assert [r["offset"] for r in rows] == list(range(30))
    assert [r["ts_broker"] for r in rows] == list(range(30))
    assert [r["seq"] for r in rows] == [i if i % 3 else None for i in range(30)]
    assert [r["error"] for r in rows][:3] == ["not a format 1 record: not JSON, not an object, "
                                              "or no version", None, None]


def test_empty_batch():
    raw = pa.table({"topic": pa.array([], pa.string()), "partition": pa.array([], pa.int32()),
                    "offset": pa.array([], pa.int64()), "ts_broker": pa.array([], pa.int64()),
                    "value": pa.array([], pa.binary())})
    assert decode_batch(raw, RUN, "read_committed").num_rows == 0
