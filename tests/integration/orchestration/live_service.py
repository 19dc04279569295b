"""A live transactional service, as the tests of issue 48 run one beside a chaos run.

``python live_service.py SERVICE.properties BOOTSTRAP TOPIC LOG``: a kafka-python producer
with the file's ``transactional.id`` commits a one-record transaction every half second
and writes ``commit <n> <time>`` to LOG; any error is an ``ERROR <class>: <message>`` line,
after which it re-initialises, as a real service does (so whoever took its id is fenced
in turn). SIGTERM stops it after the current transaction.
"""

from __future__ import annotations

import signal
import sys
import time

from kafka import KafkaProducer


def _transactional_id(path: str) -> str:
    for line in open(path):
        key, _, value = line.strip().partition("=")
        if key.strip() == "transactional.id":
            return value.strip()
    raise SystemExit(f"{path}: no transactional.id")


def main(properties: str, bootstrap: str, topic: str, log: str) -> None:
    tid = _transactional_id(properties)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))

    def connect() -> KafkaProducer:
        p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, acks="all",
                          enable_idempotence=True, max_block_ms=10000)
        p.init_transactions()
        return p

    producer, n = None, 0
    with open(log, "a") as out:
        while not stopping:
            try:
                if producer is None:
                    producer = connect()
                producer.begin_transaction()
                producer.send(topic, f"order {n}".encode()).get(timeout=10)
                producer.commit_transaction()
                n += 1
                out.write(f"commit {n} {time.time():.3f}\n")
            except Exception as exc:  # noqa: BLE001 - every error is what the test counts
                out.write(f"ERROR {type(exc).__name__}: {exc}\n")
                if producer is not None:
                    producer.close(timeout=0)
                producer = None  # re-initialised on the next round
            out.flush()
            time.sleep(0.5)
    if producer is not None:
        producer.close(timeout=5)


if __name__ == "__main__":
    main(*sys.argv[1:5])
