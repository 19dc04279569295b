"""Spark-side decoding agrees with the plain reader's, value by value (shared session)."""

from __future__ import annotations

import datetime as dt

from streaming.decode import DECODED_COLUMNS, decode_observations
from streaming.observations import decode_row
from verifier.rundata.records import RecordIdentity, encode_value

RUN = "run-1"
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


def test_spark_decoding_matches_plain_decoding(spark):
    stamp = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    kafka_rows = spark.createDataFrame(
        [("t", 0, i, stamp, v) for i, v in enumerate(VALUES)],
        "topic STRING, partition INT, offset LONG, timestamp TIMESTAMP, value BINARY",
    )
    decoded = decode_observations(kafka_rows, RUN, "read_committed")
    assert tuple(decoded.columns) == DECODED_COLUMNS
    rows = sorted(decoded.collect(), key=lambda r: r["offset"])
    for row, value in zip(rows, VALUES, strict=True):
        expected = decode_row(RUN, value)
        got = row.asDict()
        assert got["foreign"] == expected["foreign"], (value, got["error"])
        assert {k: got[k] for k in expected if k != "error"} == \
            {k: v for k, v in expected.items() if k != "error"}, value
        assert (got["error"] is None) == (expected["error"] is None)
        assert got["ts_broker"] == int(stamp.timestamp() * 1000)
