"""Write a small, clean, synthetic run folder that follows docs/formats.md exactly.

No real recorded run exists yet, so this stands in for one (the lead will replace it
with a recorded run). It models what Kafka would do: offsets assigned per partition as
records are appended, one offset per partition for every transaction marker, aborted
records visible only at read_uncommitted, an ``info`` send that never reached the log,
a commit of unknown outcome that did commit, and a producer restart (new session).

    python tests/data/make_clean_run.py tests/data/clean_run
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

RUN = "clean-run-1"
T0 = 1_795_314_800_000
PARTS = (0, 1)
PER_PARTITION = 12
MODES = ("at-most-once", "at-least-once", "idempotent", "transactional")

OBS_SCHEMA = pa.schema([
    ("reader", pa.string()), ("isolation", pa.string()), ("topic", pa.string()),
    ("partition", pa.int32()), ("offset", pa.int64()), ("run", pa.string()), ("pid", pa.string()),
    ("ses", pa.int32()), ("p", pa.int32()), ("seq", pa.int64()), ("txn", pa.int64()),
    ("abort", pa.bool_()), ("ts_send", pa.int64()), ("ts_broker", pa.int64()),
    ("batch", pa.int64()), ("observed_at", pa.int64()), ("foreign", pa.bool_()),
    ("error", pa.string()),
])  # fmt: skip


class Log:
    """One topic's partitions: appended records (or markers) at increasing offsets."""

    def __init__(self, topic: str):
        self.topic = topic
        self.entries: dict[int, list] = {p: [] for p in PARTS}  # p -> [(offset, rec|None)]

    def append(self, p: int, rec: dict | None) -> int:
        off = len(self.entries[p])
        self.entries[p].append((off, rec))
        return off


def _line(f, obj) -> None:
    f.write(orjson.dumps(obj) + b"\n")


def _plain_producer(f, log: Log, pid: str, mode: str, clock: list[int]) -> None:
    """Round-robin sends; the idempotent producer restarts once; at-most-once has one
    info send that never reached the log (not lost: info counts only if seen)."""
    ses = 1
    _line(
        f, {"type": "session", "ses": ses, "t": clock[0], "config": {"mode": mode}, "os_pid": 100}
    )
    for seq in range(PER_PARTITION):
        if mode == "idempotent" and seq == PER_PARTITION // 2:
            ses = 2  # a clean restart: everything before was acknowledged
            _line(f, {"type": "session", "ses": ses, "t": clock[0], "config": {}, "os_pid": 101})
        for p in PARTS:
            clock[0] += 7
            ident = {"ses": ses, "p": p, "seq": seq, "txn": None}
            _line(f, {"type": "invoke", "f": "send", **ident, "t": clock[0]})
            if mode == "at-most-once" and p == 1 and seq == 3:
                _line(
                    f,
                    {
                        "type": "info",
                        "f": "send",
                        **ident,
                        "t": clock[0] + 30,
                        "error": "KafkaTimeoutError: timed out",
                    },
                )
                continue
            rec = {
                "pid": pid,
                "ses": ses,
                "p": p,
                "seq": seq,
                "txn": None,
                "abort": False,
                "ts": clock[0],
            }
            off = log.append(p, rec)
            _line(f, {"type": "ok", "f": "send", **ident, "offset": off, "t": clock[0] + 2})


def _txn_producer(f, log: Log, pid: str, clock: list[int]) -> None:
    """Transactions of 4 records over both partitions; every third aborts on purpose;
    transaction 1's commit times out (info) but did commit."""
    _line(
        f,
        {
            "type": "session",
            "ses": 1,
            "t": clock[0],
            "config": {"mode": "transactional"},
            "os_pid": 102,
        },
    )
    seqs = {p: 0 for p in PARTS}
    for txn in range(PER_PARTITION // 2):
        abort = txn % 3 == 2
        clock[0] += 11
        _line(
            f, {"type": "invoke", "f": "begin", "ses": 1, "txn": txn, "abort": abort, "t": clock[0]}
        )
        _line(f, {"type": "ok", "f": "begin", "ses": 1, "txn": txn, "abort": abort, "t": clock[0]})
        for p in PARTS:
            for _ in range(2):
                clock[0] += 3
                ident = {"ses": 1, "p": p, "seq": seqs[p], "txn": txn}
                _line(f, {"type": "invoke", "f": "send", **ident, "t": clock[0]})
                rec = {
                    "pid": pid,
                    "ses": 1,
                    "p": p,
                    "seq": seqs[p],
                    "txn": txn,
                    "abort": abort,
                    "ts": clock[0],
                }
                off = log.append(p, rec)
                _line(f, {"type": "ok", "f": "send", **ident, "offset": off, "t": clock[0] + 1})
                seqs[p] += 1
        end = "abort" if abort else "commit"
        clock[0] += 5
        _line(f, {"type": "invoke", "f": end, "ses": 1, "txn": txn, "t": clock[0]})
        for p in PARTS:
            log.append(p, {"marker": end})
        if txn == 1:
            _line(
                f,
                {
                    "type": "info",
                    "f": end,
                    "ses": 1,
                    "txn": txn,
                    "t": clock[0] + 60000,
                    "error": "KafkaTimeoutError: commit timed out",
                },
            )
        else:
            _line(f, {"type": "ok", "f": end, "ses": 1, "txn": txn, "t": clock[0] + 4})


def _observations(logs: dict[str, Log]) -> dict[str, dict[str, list[dict]]]:
    """What every reader would deliver: markers never, aborted records only uncommitted."""
    rows = {r: {"read_committed": [], "read_uncommitted": []} for r in ("spark", "plain")}
    for log in logs.values():
        aborted = set()
        for p, entries in log.entries.items():
            for off, rec in entries:
                if rec is None or "marker" in rec:
                    continue
                if rec["txn"] is not None and rec["abort"]:
                    aborted.add((p, off))
                for reader in rows:
                    for iso in rows[reader]:
                        if iso == "read_committed" and (p, off) in aborted:
                            continue
                        rows[reader][iso].append({
                            "reader": reader, "isolation": iso, "topic": log.topic,
                            "partition": p, "offset": off, "run": RUN, "pid": rec["pid"],
                            "ses": rec["ses"], "p": p, "seq": rec["seq"], "txn": rec["txn"],
                            "abort": rec["abort"], "ts_send": rec["ts"], "ts_broker": rec["ts"] + 2,
                            "batch": off // 8 if reader == "spark" else -1,
                            "observed_at": rec["ts"] + 900, "foreign": False, "error": None,
                        })  # fmt: skip
    return rows


def make_run(out: Path) -> Path:
    """Write the run folder ``out`` (replacing it)."""
    shutil.rmtree(out, ignore_errors=True)
    (out / "histories").mkdir(parents=True)
    clock, logs, producers = [T0], {}, {}
    for mode in MODES:
        pid, topic = f"{mode}-0", f"t-{mode}"
        producers[pid] = {"mode": mode, "topic": topic}
        logs[topic] = log = Log(topic)
        with open(out / "histories" / f"{pid}.jsonl", "wb") as f:
            _line(
                f,
                {
                    "type": "header",
                    "format": "producer-history",
                    "version": 1,
                    "run": RUN,
                    "pid": pid,
                    "mode": mode,
                    "topic": topic,
                    "partitions": list(PARTS),
                },
            )
            if mode == "transactional":
                _txn_producer(f, log, pid, clock)
            else:
                _plain_producer(f, log, pid, mode, clock)
    (out / "config.json").write_bytes(orjson.dumps({
        "format": "run-config", "version": 1, "run": RUN, "scenario": "clean-small", "seed": 7,
        "sink": "exactly-once", "producers": producers,
    }, option=orjson.OPT_INDENT_2))  # fmt: skip
    with open(out / "nemesis.jsonl", "wb") as f:
        _line(
            f, {"type": "header", "format": "nemesis-history", "version": 1, "run": RUN, "seed": 7}
        )
        tgt = {"node": 2}
        _line(
            f,
            {
                "type": "invoke",
                "f": "start",
                "fault": "ack-loss",
                "target": tgt,
                "id": 1,
                "t": T0 + 100,
            },
        )
        _line(
            f,
            {
                "type": "ok",
                "f": "start",
                "fault": "ack-loss",
                "target": tgt,
                "id": 1,
                "t": T0 + 110,
                "detail": {"dropped": 0},
            },
        )
        _line(
            f,
            {
                "type": "invoke",
                "f": "heal",
                "fault": "ack-loss",
                "target": tgt,
                "id": 1,
                "t": T0 + 300,
            },
        )
        _line(
            f,
            {"type": "ok", "f": "heal", "fault": "ack-loss", "target": tgt, "id": 1, "t": T0 + 305},
        )
    obs = out / "observations"
    for reader, by_iso in _observations(logs).items():
        for iso, rows in by_iso.items():
            (obs / reader / iso).mkdir(parents=True)
            pq.write_table(
                pa.Table.from_pylist(rows, OBS_SCHEMA), obs / reader / iso / "part-00000.parquet"
            )
    (obs / "_format.json").write_bytes(orjson.dumps({"format": "observations", "version": 1}))
    ends = {f"{t}-{p}": len(e) for t, log in logs.items() for p, e in log.entries.items()}
    (out / "drain.json").write_bytes(orjson.dumps({
        "format": "drain", "version": 1, "completed": True, "phase": "observed",
        "deadline_s": 120, "elapsed_s": 1.5, "behind": [],
        "end_offsets": {"read_committed": ends, "read_uncommitted": ends},
        "observer_positions": {"read_committed": ends, "read_uncommitted": ends},
    }, option=orjson.OPT_INDENT_2))  # fmt: skip
    return out


if __name__ == "__main__":
    print(make_run(Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "clean_run")))
