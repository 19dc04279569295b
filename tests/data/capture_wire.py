"""Re-record the captured Kafka frames the wire codec's and the hold fault's unit tests
read (tests/data/wire/txn-<client>-kafka-<version>.json, log-kafka-<version>.json).

A one-node cluster of each broker version advertises the port of a plain recording
forwarder in front of its client listener, so every client connection passes it; each
client runs the same transactional session (init, a committed transaction over two
partitions, an aborted one); every request and response frame is written with its
direction and connection, in order. Then the codec's own requests to a broker go through
the forwarder too (``log``): ApiVersions v0 (``not_kafka``), Metadata v1 (the brokers;
the topic), and per partition ListOffsets v1 and Fetch v4 from offset 0, which show both
sessions' batches and transaction markers. Not a test: run it by hand when the wire code
needs frames of a new client or broker version (``--what log`` keeps the sessions' files).

    .venv/bin/python -m tests.data.capture_wire --versions 3.5.2,4.1.1 --base-port 21800
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
from pathlib import Path

from verifier.harness import kafka_wire
from verifier.harness.cluster import ClusterSpec, up
from verifier.harness.kafka_wire import FrameBuffer
from verifier.harness.topics import create_topics
from verifier.rundata import jvm

OUT = Path(__file__).resolve().parent / "wire"
TOPIC = "t-wire"


class Recorder:
    """A TCP forwarder that keeps every frame: (connection, direction, hex)."""

    def __init__(self, listen: int, upstream: int) -> None:
        self.frames: list[dict] = []
        self.lock = threading.Lock()
        self.upstream = upstream
        self.server = socket.create_server(("127.0.0.1", listen), reuse_port=False)
        self.conns = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.conns += 1
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
            for src, dst, direction in ((client, upstream, "request"),
                                        (upstream, client, "response")):
                threading.Thread(target=self._pump, args=(src, dst, direction, self.conns),
                                 daemon=True).start()

    def _pump(self, src, dst, direction: str, conn: int) -> None:
        buf = FrameBuffer()
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            with self.lock:
                for payload in buf.feed(data):
                    self.frames.append({"conn": conn, "direction": direction,
                                        "hex": payload.hex()})
            dst.sendall(data)

    def close(self) -> None:
        try:
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        except OSError:
            pass
        self.server.close()


def session_kafka_python(bs: str) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bs, transactional_id="wire-kafka-python",
                      enable_idempotence=True, client_id="wire-kafka-python")
    p.init_transactions()
    p.begin_transaction()
    p.send(TOPIC, b"c0", partition=0)
    p.send(TOPIC, b"c1", partition=1)
    p.commit_transaction()
    p.begin_transaction()
    p.send(TOPIC, b"a0", partition=0)
    p.flush()
    p.abort_transaction()
    p.close()


def session_librdkafka(bs: str) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bs, "transactional.id": "wire-librdkafka",
                  "client.id": "wire-librdkafka"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(TOPIC, b"c0", partition=0)
    p.produce(TOPIC, b"c1", partition=1)
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(TOPIC, b"a0", partition=0)
    p.flush(30)
    p.abort_transaction(30)


SESSIONS = {"kafka-python": session_kafka_python, "librdkafka": session_librdkafka}


def session_log_reader(port: int) -> None:
    """The codec's own requests (the readiness checks', the marker probe's) to the
    broker behind ``port``, one connection each."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.settimeout(10)
        assert kafka_wire.not_kafka(sock) is None
    kafka_wire.metadata_brokers("127.0.0.1", port)
    kafka_wire.metadata_partitions("127.0.0.1", port, [TOPIC])
    for partition in (0, 1):
        payload = kafka_wire.list_offsets_request(1, "wire-log", TOPIC, partition)
        kafka_wire.ask("127.0.0.1", port, payload, 10)
        payload = kafka_wire.fetch_request(2, "wire-log", TOPIC, partition, 0, 100)
        kafka_wire.ask("127.0.0.1", port, payload, 10)


def _recorded(recorder: Recorder, run) -> list[dict]:
    with recorder.lock:
        recorder.frames.clear()
    run()
    with recorder.lock:
        return list(recorder.frames)


def _write(name: str, doc: dict) -> None:
    OUT.mkdir(exist_ok=True)
    path = OUT / name
    path.write_text(json.dumps(doc, indent=0) + "\n")
    print(f"{path}: {len(doc['frames'])} frames")


def capture(version: str, base_port: int, state: Path, what: set[str]) -> None:
    listen = base_port + 301
    spec = ClusterSpec(nodes=1, base_port=base_port, kafka_version=version,
                       advertised_ports={1: listen})
    recorder = Recorder(listen, spec.client_port(1))
    cluster, _ = up(state / f"wire-{version}", spec, timeout=120)
    try:
        create_topics(spec.direct_bootstrap_servers(), {TOPIC: 2}, replication_factor=1)
        for client, session in SESSIONS.items():
            frames = _recorded(recorder, lambda s=session: s(spec.bootstrap_servers()))
            if "sessions" in what:
                _write(f"txn-{client}-kafka-{version}.json", {
                    "client": client, "kafka_version": version, "topic": TOPIC,
                    "frames": frames})
        if "log" in what:
            frames = _recorded(recorder, lambda: session_log_reader(listen))
            _write(f"log-kafka-{version}.json", {"kafka_version": version, "topic": TOPIC,
                                                 "listen": listen, "frames": frames})
    finally:
        cluster.down()
        recorder.close()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--versions", default="3.5.2,4.1.1")
    p.add_argument("--base-port", type=int, default=21800)
    p.add_argument("--state-dir", type=Path, default=jvm.PROJECT_ROOT / ".state" / "capture")
    p.add_argument("--what", default="sessions,log",
                   help="the files to write: sessions (txn-*), log (log-*), or both")
    args = p.parse_args()
    what = set(args.what.split(","))
    for i, version in enumerate(jvm.parse_kafka_versions(args.versions)):
        capture(version, args.base_port + 10 * i, args.state_dir, what)


if __name__ == "__main__":
    main()
