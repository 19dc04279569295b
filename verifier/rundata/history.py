"""The producer history (docs/formats.md §2): its writer and its reader.

The reader has two views of the same parse: :func:`read_history` gives one producer's
events as Python objects (a restarting generator resumes from them) and
:func:`read_histories` gives every producer's operations as one Arrow table (the checks).

One JSON line per event, appended with a single ``os.write`` on an ``O_APPEND`` file
descriptor, so each line reaches the OS before the generator's next send and a SIGKILL
loses at most the line being written. No user-space buffer: a Python ``BufferedWriter``
would hold lines in the dying process.
"""

from __future__ import annotations

import io
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from verifier.rundata.errors import VerifierError
from verifier.rundata.formats import FORMATS, RunFormatError, check_header, parses, split_lines
from verifier.rundata.layout import layout

HISTORY_FORMAT = "producer-history"
HISTORY_VERSION = FORMATS[HISTORY_FORMAT]

#: the history fields the checks read; others (config, error, os_pid) are ignored
HISTORY_SCHEMA = pa.schema([
    ("type", pa.string()), ("f", pa.string()), ("ses", pa.int32()), ("p", pa.int32()),
    ("seq", pa.int64()), ("txn", pa.int64()), ("abort", pa.bool_()), ("offset", pa.int64()),
    ("t", pa.int64()),
])  # fmt: skip


class HistoryError(VerifierError):
    """A history file that cannot be read or appended to (wrong format, version, owner)."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def history_path(run_dir: Path, pid: str) -> Path:
    """``RUN/histories/<pid>.jsonl``."""
    return layout(run_dir).history(pid)


@dataclass
class History:
    """A parsed history: the header and every complete event line, in file order."""

    path: Path
    header: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    torn_tail: bool = False  # the last line was cut by a crash and ignored

    @property
    def sessions(self) -> list[int]:
        return [e["ses"] for e in self.events if e.get("type") == "session"]


def read_history(path: Path) -> History:
    """Parse a history file. A torn (unparseable) *last* line is ignored; a torn line
    anywhere else, a missing header, or an unknown format or version is an error naming
    the file."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HistoryError(f"cannot read history {path}: {exc}") from exc
    lines = data.split(b"\n")
    complete_tail = lines[-1] == b""
    if complete_tail:
        lines.pop()
    parsed: list[dict[str, Any]] = []
    torn = False
    for i, raw in enumerate(lines):
        try:
            obj = orjson.loads(raw)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
            if i == len(lines) - 1:
                torn = True  # SIGKILL mid-write: the reader's promise is to tolerate it
                break
            raise HistoryError(f"{path}: line {i + 1} is not a JSON object ({exc}); only "
                               "the last line of a history may be torn") from None
        if i == len(lines) - 1 and not complete_tail:
            torn = True  # parseable but unterminated: the write may have been cut short
            break
        parsed.append(obj)
    if not parsed:
        raise HistoryError(f"{path}: empty history (no header line)")
    header = parsed[0]
    _check_header(path, header)
    return History(path=path, header=header, events=parsed[1:], torn_tail=torn)


def _check_header(path: Path, header: dict[str, Any]) -> None:
    if header.get("type") != "header":
        raise HistoryError(f"{path}: not a producer history (first line {header!r}); "
                           f"expected format {HISTORY_FORMAT!r}")
    try:
        check_header(path, header, HISTORY_FORMAT)
    except RunFormatError as exc:
        raise HistoryError(f"{path}: not a producer history this reader knows: "
                           f"{exc.problem}") from None


def invoke_send_lines(ses: int, idents, txn: int | None, t: int) -> list[bytes]:
    """The ``invoke`` lines of one chunk of sends (every generator's hot path), byte for
    byte what ``orjson.dumps`` of the line's dict gives, without a dict per record."""
    head = b'{"type":"invoke","f":"send","ses":%d,"p":' % ses
    tail = b',"txn":%s,"t":%d}\n' % (b"null" if txn is None else b"%d" % txn, t)
    return [b'%s%d,"seq":%d%s' % (head, p, seq, tail) for p, seq in idents]


def ok_send_line(ses: int, p: int, seq: int, txn: int | None, offset: int, t: int) -> bytes:
    """The ``ok`` line of an acknowledged send at ``offset``, byte for byte what
    ``orjson.dumps`` of the line's dict gives (the other outcomes are rare: dicts)."""
    return b'{"type":"ok","f":"send","ses":%d,"p":%d,"seq":%d,"txn":%s,"offset":%d,"t":%d}\n' % (
        ses, p, seq, b"null" if txn is None else b"%d" % txn, offset, t)


#: The ``info`` error of a send at acks=0: the record left, no broker says it was appended.
NO_ACK = "NoAcknowledgement: acks=0, the broker does not answer"


def no_ack_send_line(ses: int, p: int, seq: int, txn: int | None, t: int) -> bytes:
    """The ``info`` line of a send at acks=0 (every send of an at-most-once producer),
    byte for byte what ``orjson.dumps`` of the line's dict gives."""
    return (b'{"type":"info","f":"send","ses":%d,"p":%d,"seq":%d,"txn":%s,"error":"%s",'
            b'"t":%d}\n') % (ses, p, seq, b"null" if txn is None else b"%d" % txn,
                             NO_ACK.encode(), t)


class HistoryWriter:
    """Appends events to one producer's history.

    Opening an existing file keeps it (a restarted producer appends its new session) after
    checking its header names the same producer, and cuts off a torn last line: that line
    was never completely written, so the event it began never counted (an ``invoke`` is
    written before the send it announces), and appending after it would leave a torn line
    in the middle of the file.
    """

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.fstat(self._fd).st_size == 0:
                self.write({"type": "header", "format": HISTORY_FORMAT,
                            "version": HISTORY_VERSION, **header})
            else:
                self._check_existing(header)
        except BaseException:
            os.close(self._fd)
            raise

    def _check_existing(self, header: dict[str, Any]) -> None:
        existing = read_history(self.path)
        for key in ("run", "pid", "mode", "topic"):
            if key in header and existing.header.get(key) != header[key]:
                raise HistoryError(
                    f"{self.path} belongs to {key}={existing.header.get(key)!r}, not "
                    f"{header[key]!r}: use a new --run-dir or --pid")
        if existing.torn_tail:
            data = self.path.read_bytes()
            os.truncate(self.path, data.rfind(b"\n") + 1)

    def write(self, event: dict[str, Any]) -> None:
        """Append one event (adds ``t`` when missing)."""
        if "t" not in event:
            event["t"] = now_ms()
        self.write_raw(orjson.dumps(event) + b"\n")

    def write_raw(self, data: bytes) -> None:
        """Append already-encoded lines with as few system calls as possible."""
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _parse_body(path: Path, body: bytes) -> pa.Table:
    import pyarrow.json as pajson

    if body.strip() == b"":
        return HISTORY_SCHEMA.empty_table()
    opts = pajson.ParseOptions(explicit_schema=HISTORY_SCHEMA, unexpected_field_behavior="ignore")
    try:
        return pajson.read_json(io.BytesIO(body), parse_options=opts)
    except pa.ArrowInvalid as exc:
        # name the first bad line (+2: 1-based, after the header)
        for i, line in enumerate(body.split(b"\n")):
            if line.strip() and not parses(line):
                raise RunFormatError(path, f"line {i + 2}: torn or not JSON") from None
        raise RunFormatError(path, f"bad field type ({exc})") from None


def read_histories(folder: Path, run: str, pids) -> tuple[pa.Table, dict[str, bool]]:
    """Every producer's operations (invoke/ok/fail/info) as one Arrow table with a ``pid``
    column, plus pid -> whether a session began.

    pyarrow's multi-threaded JSON reader (C++) parses against an explicit schema: much
    faster than Python-level parsing on two cores. Only when it rejects a file is the file
    scanned line by line, to name the torn line.
    """
    import pyarrow.compute as pc

    folder = Path(folder)
    if not folder.is_dir():
        raise RunFormatError(folder, "missing (no producer histories)")
    tables, started = [], {}
    for pid in pids:
        path = folder / f"{pid}.jsonl"
        if not path.is_file():
            started[pid] = False  # a producer that never started: UNKNOWN for its mode
            continue
        head, body = split_lines(path, path.read_bytes())
        check_header(path, head, HISTORY_FORMAT)
        if head.get("run") != run or head.get("pid") != pid:
            raise RunFormatError(
                path,
                f"header names run {head.get('run')!r} pid "
                f"{head.get('pid')!r}, config says {run!r} {pid!r}",
            )
        table = _parse_body(path, body)
        started[pid] = bool(pc.any(pc.equal(table["type"], "session")).as_py())
        ops = table.filter(pc.is_in(table["type"], pa.array(["invoke", "ok", "fail", "info"])))
        tables.append(ops.append_column("pid", pa.repeat(pa.scalar(pid, pa.string()),
                                                         ops.num_rows)))
    unknown = sorted(p.stem for p in folder.glob("*.jsonl") if p.stem not in pids)
    if unknown:
        raise RunFormatError(folder, f"histories of producers not in config.json: {unknown}")
    if not tables:
        raise RunFormatError(folder, "empty run: no producer history")
    table = pa.concat_tables(tables)
    if table.num_rows == 0:
        raise RunFormatError(folder, "empty run: the histories hold no operation")
    return table, started


class HistoryTail:
    """Follows a history while its producer appends to it: each :meth:`poll` reads only the
    bytes written since the last one and counts the send outcomes of the complete lines
    (the live progress line). A line still being written waits for the next poll."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._pos = 0
        self._rest = b""
        self.ok = 0
        self.info = 0
        self.fail = 0

    def poll(self) -> HistoryTail:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                data = f.read()
        except FileNotFoundError:
            return self
        self._pos += len(data)
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()  # a line still being written
        for line in lines:
            if b'"send"' not in line:
                continue
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if ev.get("f") == "send":
                kind = ev.get("type")
                if kind == "ok":
                    self.ok += 1
                elif kind == "info":
                    self.info += 1
                elif kind == "fail":
                    self.fail += 1
        return self


class HistoryFollower:
    """Reads a history while its producer appends to it, as Arrow: each :meth:`poll`
    parses the complete lines written since the last one (the checks' schema, as
    :func:`read_histories`) and returns those operations with a ``pid`` column.

    A line still being written waits for the next poll: the position kept is the end of
    the last complete line, so the bytes after it are read again. A generator that
    restarts reopens the file, cuts off a torn last line there and appends its new
    session (:class:`HistoryWriter`), which is where the next poll goes on. The header is
    checked once (run and pid)."""

    def __init__(self, path: Path, run: str, pid: str) -> None:
        self.path, self.run, self.pid = Path(path), run, pid
        self.pos = 0  # end of the last complete line consumed
        self.started = False  # a session line was seen
        self.lines = 0  # operations returned so far

    def poll(self) -> pa.Table | None:
        """The operations of the lines completed since the last poll (None: none)."""
        import pyarrow.compute as pc

        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < self.pos:  # cut below what was read: not an append-only history
                    raise RunFormatError(self.path, f"shrank to {size} bytes below the "
                                                    f"{self.pos} already read")
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return None
        end = data.rfind(b"\n") + 1
        if end == 0:
            return None
        body = data[:end]
        if self.pos == 0:
            head, body = split_lines(self.path, body)
            check_header(self.path, head, HISTORY_FORMAT)
            if head.get("run") != self.run or head.get("pid") != self.pid:
                raise RunFormatError(self.path, f"header names run {head.get('run')!r} pid "
                                                f"{head.get('pid')!r}, not {self.run!r} "
                                                f"{self.pid!r}")
        self.pos += end
        table = _parse_body(self.path, body)
        self.started = self.started or bool(pc.any(pc.equal(table["type"], "session")).as_py())
        ops = table.filter(pc.is_in(table["type"], pa.array(["invoke", "ok", "fail", "info"])))
        self.lines += ops.num_rows
        return ops.append_column("pid", pa.repeat(pa.scalar(self.pid, pa.string()), ops.num_rows))
