"""The user's records (issue 46): a generator whose plan names a pipeline file's ``INPUT``
topic sends record *i* of ``make_record`` (or of its ``SAMPLES`` file) instead of the
tool's value, and the tool's value (the record's identity, format 1, unpadded) in the
``verifier.id`` header and, when the file names an ``ID_FIELD``, in that field of the
record's JSON value.

The identity still decides everything on the producer side: the history's sends are the
same ``(pid, p, seq)`` lines, a re-send of ``(p, seq)`` sends the same record *i* again
(``i = seq * partitions + p``: verifier.rundata.pipeline_file.record_index), and the
readers decode the header (streaming.decode, streaming.plain_reader), so every
producer-side check judges this column as any other.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from producers import record_server as RS
from verifier.rundata.errors import UsageError
from verifier.rundata.pipeline_file import (
    ID_HEADER,
    FileContract,
    UserRecord,
    encode_record,
    read_contract,
    record_index,
)


def load_make_record(spec: str) -> Callable:
    """``make_record`` of the pipeline file or module ``spec`` names (``FILE.py[:f]`` or
    ``pkg.mod:f``; the function after the colon is build's, not ours), or the record
    maker of its SAMPLES file."""
    return load_records(spec).make_record  # type: ignore[return-value]


def load_records(spec: str) -> FileContract:
    """What the pipeline file ``spec`` names says about its records, checked as before the
    run (verifier.rundata.pipeline_file.read_contract)."""
    target = spec.partition(":")[0]
    if target.endswith(".py"):
        path = Path(target)
        name = f"verifier_user_records_{abs(hash(str(path)))}"
        loader = importlib.util.spec_from_file_location(name, path)
        if loader is None or loader.loader is None:
            raise UsageError(f"cannot load {path}")
        module = importlib.util.module_from_spec(loader)
        sys.modules[name] = module
        loader.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    contract = read_contract(module, spec)
    if not callable(contract.make_record):
        raise UsageError(f"{spec}: no make_record(topic, i) or SAMPLES")
    return contract


class RecordMaker:
    """Record ``(p, seq)`` of one declared topic as the producer sends it."""

    def __init__(self, make: Callable, topic: str, partitions: int,
                 id_field: str | None = None) -> None:
        self.make, self.topic, self.partitions = make, topic, partitions
        self.id_field = id_field

    @classmethod
    def from_plan(cls, entry: dict) -> RecordMaker:
        """From config.json ``user_input.<pid>``: ``{"spec", "topic", "partitions"}``."""
        contract = load_records(entry["spec"])
        return cls(contract.make_record, entry["topic"], int(entry["partitions"]),
                   contract.id_field)

    def __call__(self, p: int, seq: int, identity: bytes = b"") -> UserRecord:
        i = record_index(p, seq, self.partitions)
        return encode_record(self.make(self.topic, i), f"make_record({self.topic!r}, {i})",
                             self.id_field, identity)

    def sent(self, p: int, seq: int, identity: bytes) -> UserRecord:
        """Record (p, seq) as it goes on the wire: its identity header last (and the
        identity in its ID_FIELD)."""
        r = self(p, seq, identity)
        return UserRecord(r.key, r.value, (*r.headers, (ID_HEADER, identity)), r.timestamp_ms)

    def send(self, send, topic: str, p: int, seq: int, identity: bytes):
        """kafka-python's ``producer.send`` of record (p, seq) with its identity."""
        r = self.sent(p, seq, identity)
        return send(topic, r.value, r.key, headers=list(r.headers), partition=p,
                    timestamp_ms=r.timestamp_ms)

    def produce(self, produce, topic: str, p: int, seq: int, identity: bytes, callback):
        """confluent-kafka's ``producer.produce`` of record (p, seq) with its identity."""
        r = self.sent(p, seq, identity)
        kw = {} if r.timestamp_ms is None else {"timestamp": r.timestamp_ms}
        return produce(topic, r.value, r.key, partition=p, on_delivery=callback,
                       headers=list(r.headers), **kw)


def serve(plan_path: str, pid: str, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Answer record requests (producers.record_server's frames) until the end of
    ``stdin``: the records of the generator ``pid``'s declared topic."""
    from verifier.rundata.plan import read_plan

    entry = read_plan(Path(plan_path)).user_input.get(pid)
    if entry is None:
        raise UsageError(f"{plan_path}: producer {pid!r} writes no declared topic")
    maker = RecordMaker.from_plan(entry)
    while (body := RS.read_frame(stdin)) is not None:
        out: list = []
        for p, seq, identity in RS.decode_request(body):
            try:
                out.append(maker.sent(p, seq, identity))
            except Exception as exc:  # noqa: BLE001 - the record's own failure, sent back
                out.append(f"{type(exc).__name__}: {exc}")
        stdout.write(RS.encode_response(out))
        stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m producers.user_records serve --plan RUN/config.json --pid P``: the
    record server of a generator that cannot call Python (the Java one). Its stdout is
    the protocol's alone: what else would print there (a ``print`` in make_record) goes
    to stderr, the generator's log."""
    import argparse
    import os

    parser = argparse.ArgumentParser(prog="python -m producers.user_records")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("--plan", required=True)
    parser.add_argument("--pid", required=True)
    args = parser.parse_args(argv)
    wire = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        return serve(args.plan, args.pid, sys.stdin.buffer, wire)
    except UsageError as exc:
        print(f"producers.user_records: usage error: {exc}", file=sys.stderr)
        return 64


__all__ = ["RecordMaker", "load_make_record", "load_records", "serve"]


if __name__ == "__main__":
    sys.exit(main())
