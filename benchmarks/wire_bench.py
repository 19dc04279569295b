"""The wire codec where the fault proxy runs it: kafka-python's messages against the
hand-written parser they replaced, and the pieces still kept by hand against kafka-python.

    .venv/bin/python benchmarks/wire_bench.py --baseline DIR [--seconds 1] [--rounds 3]

``DIR`` is a checkout of the project from before the codec used kafka-python's messages
(``git archive 7dbb780 | tar -x -C DIR``); the same measurements run there in a child
process and are printed beside this tree's (each side in processes of its own, rounds
alternating, medians). Not a test: figures for docs/benchmarks.md.

1. Calls per second on the recorded frames of ``tests/data/wire`` (kafka-python against
   Kafka 4.1.1) and on a Produce of two 16 KiB batches built the same way: the header
   (read on every request the proxy forwards), ``produce_acks`` (every Produce), and
   ``request_identity`` / ``response_summary`` (every frame of the transactional APIs
   while a hold rule is set).
2. Produce requests forwarded per second by the proxy (in process, one connection, 64 in
   flight, a stand-in broker on loopback answering each with the recorded answer), and
   the CPU time per request of the whole process (client, proxy and stand-in); also
   with a hold rule set that holds nothing (every request's identity read).
3. This tree only: the pieces kept by hand (header, acks) through kafka-python instead,
   and the proxy's figures with the acks read by kafka-python.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSION = ROOT / "tests" / "data" / "wire" / "txn-kafka-python-kafka-4.1.1.json"
IN_FLIGHT = 64


def _session() -> tuple[list[bytes], dict[bytes, bytes]]:
    """The session's requests in order, and each one's recorded answer."""
    from verifier.harness.kafka_wire import request_identity, response_correlation_id

    doc = json.loads(SESSION.read_text())
    requests, pending, answer = [], {}, {}
    for f in doc["frames"]:
        payload = bytes.fromhex(f["hex"])
        if f["direction"] == "request":
            requests.append(payload)
            pending.setdefault(f["conn"], []).append(payload)
            continue
        corr = response_correlation_id(payload)
        while pending.get(f["conn"]):
            req = pending[f["conn"]].pop(0)
            if request_identity(req).correlation_id == corr:
                answer[req] = payload
                break
    return requests, answer


def _big_produce(template: bytes, batch_bytes: int) -> bytes:
    """The recorded Produce with each partition's batch refilled to ``batch_bytes`` of
    200-byte records (kafka-python's builder and encoder, as its producer sends them)."""
    from kafka.protocol.producer import ProduceRequest
    from kafka.record.memory_records import MemoryRecordsBuilder

    version = struct.unpack_from(">h", template, 2)[0]
    bio = io.BytesIO(template)
    ProduceRequest.parse_header(bio, version=version)
    request = ProduceRequest.decode(template[bio.tell():], version=version)
    for topic in request.topic_data:
        for part in topic.partition_data:
            builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=batch_bytes)
            builder.set_producer_state(7, 0, 0, True)
            while builder.append(0, None, b'{"abort":false,"i":0}'.ljust(200, b" ")) is not None:
                pass
            builder.close()
            part.records = builder.buffer()
    request.with_header(correlation_id=5, client_id="wire-kafka-python")
    return bytes(request.encode(header=True))


def _rate(fn, arg, seconds: float) -> float:
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(200):
            fn(arg)
        n += 200
    return n / (time.perf_counter() - t0)


def decode_rates(seconds: float) -> dict:
    """Calls per second of each codec function on the recorded frames."""
    from verifier.harness import kafka_wire as w

    requests, answer = _session()
    by_api: dict[str, bytes] = {}
    for r in requests:
        by_api.setdefault(w.request_identity(r).api_name, r)
    produce = by_api["Produce"]
    out = {"header": _rate(w.decode_request_header, produce, seconds),
           "produce_acks": _rate(w.produce_acks, produce, seconds),
           "produce_acks 2x16KiB": _rate(w.produce_acks, _big_produce(produce, 16384),
                                         seconds)}
    for name, r in sorted(by_api.items()):
        if name in ("Produce", "EndTxn", "AddPartitionsToTxn", "InitProducerId",
                    "AddOffsetsToTxn"):
            ident = w.request_identity(r)
            out[f"identity {name}"] = _rate(w.request_identity, r, seconds)
            out[f"summary {name}"] = _rate(
                lambda p, i=ident: w.response_summary(p, i.api_key, i.api_version),
                answer[r], seconds)
    return out


def _library_acks(payload: bytes) -> int:
    """The acks of a Produce request as kafka-python's ``ProduceRequest`` decodes it."""
    from kafka.protocol.producer import ProduceRequest

    from verifier.harness.kafka_wire import decode_request, decode_request_header

    return decode_request(ProduceRequest, payload, decode_request_header(payload)).acks


def library_rates(seconds: float) -> dict:
    """What the pieces kept by hand would cost through kafka-python (this tree only)."""
    from kafka.protocol.api_header import RequestHeader

    requests, answer = _session()
    produce = next(r for r in requests if r[:2] == b"\x00\x00")
    out = {"header, kafka-python": _rate(
        lambda p: RequestHeader.decode(io.BytesIO(p), flexible=False), produce, seconds),
        "produce_acks, kafka-python": _rate(_library_acks, produce, seconds),
        "produce_acks 2x16KiB, kafka-python": _rate(
            _library_acks, _big_produce(produce, 16384), seconds)}
    from verifier.harness.faults import connection

    hand, connection.produce_acks = connection.produce_acks, _library_acks
    try:
        for name, payload in (("215 B", produce), ("2x16KiB", _big_produce(produce, 16384))):
            total = max(2000, int(4000 * seconds))
            asyncio.run(_forward(500, payload, answer[produce], False))  # warm up
            wall, cpu = asyncio.run(_forward(total, payload, answer[produce], False))
            out[f"proxy {name} requests/s, acks by kafka-python"] = total / wall
            out[f"proxy {name} cpu us/request, acks by kafka-python"] = cpu / total * 1e6
    finally:
        connection.produce_acks = hand
    return out


#: a hold rule that matches no request of the session: the proxy then reads every
#: request's identity and every answer of the APIs it follows (as in a hold scenario)
WATCH = {"kind": "hold", "api_keys": [0], "transactional_id": "nobody",
         "release_on": {"api_key": 26, "direction": "response", "transactional_id": "same"}}


async def _forward(total: int, payload: bytes, answer: bytes,
                   watch: bool) -> tuple[float, float]:
    """Wall and CPU seconds to forward ``total`` Produce requests through the proxy."""
    from verifier.harness.faults.proxy import Proxy

    async def broker(reader, writer):
        buf = b""
        while data := await reader.read(1 << 16):
            buf += data
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">i", buf)[0]:
                size = struct.unpack_from(">i", buf)[0]
                corr = buf[8:12]
                buf = buf[4 + size:]
                writer.write(struct.pack(">i", len(answer)) + corr + answer[4:])
            await writer.drain()

    server = await asyncio.start_server(broker, "127.0.0.1", 0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        listen = s.getsockname()[1]
    proxy = Proxy({1: (listen, server.sockets[0].getsockname()[1])})
    await proxy.start()
    if watch:
        proxy.add_rule(WATCH)
    reader, writer = await asyncio.open_connection("127.0.0.1", listen)
    framed = struct.pack(">i", len(payload)) + payload
    wall, cpu = time.perf_counter(), time.process_time()
    sent = received = 0
    while received < total:
        while sent < total and sent - received < IN_FLIGHT:
            writer.write(framed)
            sent += 1
        await writer.drain()
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        await reader.readexactly(size)
        received += 1
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    writer.close()
    await writer.wait_closed()
    await asyncio.sleep(0.1)  # the proxy's connection sees the close and ends
    await proxy.close()
    server.close()
    await server.wait_closed()
    return wall, cpu


def proxy_rates(seconds: float) -> dict:
    """Produce requests per second through the proxy, and CPU microseconds per request."""
    requests, answer = _session()
    produce = next(r for r in requests if r[:2] == b"\x00\x00")
    out = {}
    cases = [("215 B", produce, False), ("2x16KiB", _big_produce(produce, 16384), False),
             ("215 B watching", produce, True)]
    for name, payload, watch in cases:
        total = max(2000, int(4000 * seconds))
        asyncio.run(_forward(500, payload, answer[produce], watch))  # warm up
        wall, cpu = asyncio.run(_forward(total, payload, answer[produce], watch))
        out[f"proxy {name} requests/s"] = total / wall
        out[f"proxy {name} cpu us/request"] = cpu / total * 1e6
    return out


def measure(seconds: float, library: bool) -> dict:
    return {**decode_rates(seconds), **proxy_rates(seconds),
            **(library_rates(seconds) if library else {})}


def _child(root: Path, seconds: float) -> dict:
    """The measurements of the tree at ``root``, in a process of their own (this tree's
    also the hand-kept pieces through kafka-python)."""
    env = {**os.environ, "PYTHONPATH": str(root.resolve())}
    argv = [sys.executable, __file__, "--json", "--seconds", str(seconds)]
    if root == ROOT:
        argv.append("--library")
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True,
                         cwd=root).stdout
    return json.loads(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", type=Path, help="a checkout of the hand-written codec")
    p.add_argument("--seconds", type=float, default=1.0, help="per decode measurement")
    p.add_argument("--rounds", type=int, default=3, help="alternating, medians printed")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--library", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.json:
        print(json.dumps(measure(args.seconds, args.library)))
        return
    sides = {"this tree": ROOT, **({"baseline": args.baseline} if args.baseline else {})}
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, root in sides.items():
            runs[name].append(_child(root, args.seconds))
    med = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
           for name, rs in runs.items()}
    here, base = med["this tree"], med.get("baseline", {})
    print(f"{'':50s} {'this tree':>12s} {'baseline':>12s} {'ratio':>7s}")
    for key, value in here.items():
        b = base.get(key)
        ratio = f"{value / b:7.2f}" if b else ""
        print(f"{key:50s} {value:12.1f} {'' if b is None else f'{b:.1f}':>12s} {ratio}")


if __name__ == "__main__":
    main()
