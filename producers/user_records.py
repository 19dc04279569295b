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

    def send(self, send, topic: str, p: int, seq: int, identity: bytes):
        """``producer.send`` of record (p, seq) with its identity header (and in its
        ID_FIELD)."""
        r = self(p, seq, identity)
        return send(topic, r.value, r.key, headers=[*r.headers, (ID_HEADER, identity)],
                    partition=p, timestamp_ms=r.timestamp_ms)


__all__ = ["RecordMaker", "load_make_record", "load_records"]
