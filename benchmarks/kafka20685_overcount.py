#!/usr/bin/env python3
"""KAFKA-20685 by hand, offline (issue 50): the final count per key of a kafka-20685 run's
streams-count-eos-flush output against the input's acknowledged records.

Not a benchmark: kept beside the benchmarks because it is run by hand and its output is
quoted in docs/known-bugs.md, until the reference oracle judges these runs itself.

    .venv/bin/python benchmarks/kafka20685_overcount.py RUN_FOLDER

The preset's key is floorMod(Arrays.hashCode(key bytes), 1000000) as ``k%02d``
(verifier.apps.CountPerKey), the kafka-python generator's record key ``<pid>:<p>:<seq>``.
"""

from __future__ import annotations

import collections
import json
import sys

import pyarrow.parquet as pq

PID = "idempotent-0"
STATE = "apps/streams-count-eos-flush/state-read_committed.parquet"


def bucket(key: bytes) -> str:
    """Java's Arrays.hashCode over signed bytes, floorMod 1000000."""
    h = 1
    for x in key:
        h = (31 * h + (x - 256 if x > 127 else x)) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= (1 << 31) else h
    return f"k{h % 1000000:02d}"


def main(run: str) -> None:
    want: collections.Counter = collections.Counter()
    with open(f"{run}/histories/{PID}.jsonl") as f:
        for line in f:
            d = json.loads(line)
            if d.get("type") == "ok" and d.get("f") == "send":
                want[bucket(f"{PID}:{d['p']}:{d['seq']}".encode())] += 1
    last: dict[str, int] = {}
    rows = pq.read_table(f"{run}/{STATE}").to_pylist()
    for r in sorted(rows, key=lambda r: (r["out_partition"], r["out_offset"])):
        last[r["key"]] = int(r["value"])
    over = [k for k, v in last.items() if v > want.get(k, 0)]
    by = sum(last[k] - want.get(k, 0) for k in over)
    under = [k for k, v in want.items() if last.get(k, 0) < v]
    print(f"input {sum(want.values())} records, {len(want)} keys; output sum "
          f"{sum(last.values())}, {len(last)} keys; over-counted keys {len(over)} (by {by}), "
          f"under-counted {len(under)}")


if __name__ == "__main__":
    main(sys.argv[1])
