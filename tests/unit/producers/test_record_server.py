"""The record server (issue 46): the frames a generator that cannot call Python (the Java
one) asks a pipeline file's records with (producers.record_server), the server process
(``python -m producers.user_records serve``) and the Java side's reading of its answers
(``--print-user-records``, no broker; skipped when the Java generator is not built)."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from producers import record_server as RS
from producers.clients import JAVA_MAIN
from producers.user_records import RecordMaker, load_records
from verifier.rundata import jvm
from verifier.rundata.plan import PlannedProducer, RunPlan
from verifier.rundata.record_encoding import ID_HEADER, UserRecord


def test_a_request_is_its_length_then_count_and_each_p_seq_identity():
    assert RS.encode_request([(2, 5, b"ID")]) == (
        b"\x00\x00\x00\x16"  # the body: 22 bytes
        b"\x00\x00\x00\x01"  # one record
        b"\x00\x00\x00\x02" b"\x00\x00\x00\x00\x00\x00\x00\x05"  # p, seq (i64)
        b"\x00\x00\x00\x02ID")  # the identity, its length first
    items = [(0, 0, b""), (7, 2**40, b'{"v":1}')]
    frame = RS.encode_request(items)
    body = RS.read_frame(io.BytesIO(frame))
    assert RS.decode_request(body) == items


def test_a_response_carries_each_record_or_why_not():
    made = [UserRecord(b"k", b'{"a":1}', (("channel", b"web"), (ID_HEADER, b"I")), 1767225600000),
            "PipelineFileError: make_record('orders', 4) returned None",
            UserRecord(None, None, (), None), UserRecord(b"", b"", (), 0)]
    stream = io.BytesIO(RS.encode_response(made) + RS.encode_response([]))
    assert RS.decode_response(RS.read_frame(stream), 4) == made  # None and b"" kept apart
    assert RS.decode_response(RS.read_frame(stream), 0) == []
    assert RS.read_frame(stream) is None  # the end, between frames


def test_a_cut_or_overlong_frame_is_an_error():
    frame = RS.encode_request([(1, 1, b"abc")])
    with pytest.raises(RS.FrameError, match="cut short"):
        RS.read_frame(io.BytesIO(frame[:-1]))
    with pytest.raises(RS.FrameError, match="length cut short"):
        RS.read_frame(io.BytesIO(frame[:2]))
    with pytest.raises(RS.FrameError, match="out of step"):  # not allocated, refused
        RS.read_frame(io.BytesIO(b"\xff\xff\xff\xff" + frame))
    with pytest.raises(RS.FrameError, match="left after"):
        RS.decode_request(RS.read_frame(io.BytesIO(frame)) + b"x")
    with pytest.raises(RS.FrameError, match="past the frame's end"):
        RS.decode_response(b"\x00\x00\x00\x00\x09k", 1)


#: a pipeline file whose make_record prints (stdout is the protocol's: the server moves
#: it away) and fails for record 4
PIPELINE = """
INPUT = {"orders": 3}
ID_FIELD = "vid"
ORACLE = "reference"
def make_record(topic, i):
    print("making", i)
    if i == 4:
        raise ValueError("no order 4")
    return {"key": f"c{i % 2}", "value": {"order_id": i}, "headers": {"h": str(i)},
            **({"timestamp": 1767225600000 + i} if i % 2 else {})}
def build(spark, source):
    return None
"""


@pytest.fixture()
def plan(tmp_path):
    spec = tmp_path / "job.py"
    spec.write_text(PIPELINE)
    producer = PlannedProducer("in-orders-0", "input:orders", "idempotent", "r1.in.orders")
    path = RunPlan("r1", "s", 1, "exactly-once", "127.0.0.1:1", {"in-orders-0": producer},
                   extra={"user_input": {"in-orders-0": {"spec": str(spec), "topic": "orders",
                                                         "partitions": 3}}}
                   ).write(tmp_path / "config.json")
    contract = load_records(str(spec))
    return path, RecordMaker(contract.make_record, "orders", 3, contract.id_field)


ASKED = [(2, 5, b'{"v":1,"id":"a"}'), (1, 1, b"I4"), (0, 0, b"I0"), (1, 0, b"I1")]


def test_the_server_answers_what_the_record_maker_makes(plan):
    path, maker = plan
    proc = subprocess.run(
        [sys.executable, "-m", "producers.user_records", "serve", "--plan", str(path),
         "--pid", "in-orders-0"], input=RS.encode_request(ASKED) + RS.encode_request(ASKED[:1]),
        capture_output=True, timeout=60, check=True)
    stream = io.BytesIO(proc.stdout)
    got = RS.decode_response(RS.read_frame(stream), len(ASKED))
    assert got[1] == "ValueError: no order 4"  # i = 1 * 3 + 1
    want = [maker.sent(p, seq, ident) for p, seq, ident in ASKED if (p, seq) != (1, 1)]
    assert [got[0], *got[2:]] == want
    assert got[0].headers == (("h", b"17"), (ID_HEADER, ASKED[0][2]))  # i = 5 * 3 + 2
    assert RS.decode_response(RS.read_frame(stream), 1) == want[:1]
    assert RS.read_frame(stream) is None
    assert b"making 17" in proc.stderr  # the user's print, out of the protocol's way


def test_the_java_generator_reads_the_servers_records(plan):
    if not jvm.java_generator_built():
        pytest.skip("the Java generator is not built (or its sources changed): "
                    "run `make setup`")
    path, maker = plan
    stdin = "".join(f"{p}\t{seq}\t{ident.decode()}\n" for p, seq, ident in ASKED)
    out = subprocess.run([jvm.java_executable(), "-cp", jvm.java_generator_jars().classpath(),
                          JAVA_MAIN, "--print-user-records", sys.executable, str(path),
                          "in-orders-0"], input=stdin, capture_output=True, text=True,
                         timeout=60, check=True).stdout.splitlines()
    assert out[1] == "ERROR\tValueError: no order 4"
    for line, (p, seq, ident) in zip([out[0], *out[2:]], [ASKED[0], *ASKED[2:]], strict=True):
        r = maker.sent(p, seq, ident)
        assert line.split("\t") == [
            str(p), "-" if r.timestamp_ms is None else str(r.timestamp_ms),
            r.key.hex(), r.value.hex(), ",".join(f"{k}={v.hex()}" for k, v in r.headers)]
