"""The user's records (issue 46): a generator whose plan names a pipeline file's ``INPUT``
topic sends record *i* of ``make_record`` instead of the tool's value, and the tool's
value (the record's identity, format 1, unpadded) in the ``verifier.id`` header.

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
    UserRecord,
    encode_record,
    record_index,
)


def load_make_record(spec: str) -> Callable:
    """``make_record`` of the pipeline file or module ``spec`` names (``FILE.py[:f]`` or
    ``pkg.mod:f``; the function after the colon is build's, not ours)."""
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
    make = getattr(module, "make_record", None)
    if not callable(make):
        raise UsageError(f"{spec}: no make_record(topic, i)")
    return make


class RecordMaker:
    """Record ``(p, seq)`` of one declared topic as the producer sends it."""

    def __init__(self, make: Callable, topic: str, partitions: int) -> None:
        self.make, self.topic, self.partitions = make, topic, partitions

    @classmethod
    def from_plan(cls, entry: dict) -> RecordMaker:
        """From config.json ``user_input.<pid>``: ``{"spec", "topic", "partitions"}``."""
        return cls(load_make_record(entry["spec"]), entry["topic"], int(entry["partitions"]))

    def __call__(self, p: int, seq: int) -> UserRecord:
        i = record_index(p, seq, self.partitions)
        return encode_record(self.make(self.topic, i), f"make_record({self.topic!r}, {i})")

    def send(self, send, topic: str, p: int, seq: int, identity: bytes):
        """``producer.send`` of record (p, seq) with its identity header."""
        r = self(p, seq)
        return send(topic, r.value, r.key, headers=[*r.headers, (ID_HEADER, identity)],
                    partition=p, timestamp_ms=r.timestamp_ms)


__all__ = ["RecordMaker", "load_make_record"]
