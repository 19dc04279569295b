"""A run folder held in memory so a mutation can edit it and write a self-consistent copy.

Everything a check reads is here: config.json, the histories (parsed lines), every
(reader, isolation)'s observation rows (one Arrow table each), drain.json and the
observer's progress files. :meth:`RunImage.shift` moves every offset at or after a point
of one partition in all of them at once (observations of every reader, the histories'
``ok`` offsets, drain.json's end offsets and observer positions, the progress files), so
a record inserted into the log looks as if Kafka had appended it there.
"""

from __future__ import annotations

import copy
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from verifier.rundata.formats import RunFormatError
from verifier.rundata.layout import layout
from verifier.rundata.plan import read_plan_json
from verifier.rundata.vocab import ISOLATIONS

#: what a copy leaves out: outputs of an earlier analysis, process logs, checkpoints
SKIP = ("verdict.json", "junit.xml", "report.html", "report.png", "logs", "checkpoints",
        "selftest")  # fmt: skip


@dataclass
class RunImage:
    root: Path
    config: dict
    histories: dict[str, list[dict]]
    obs: dict[tuple[str, str], pa.Table]
    drain: dict
    progress: dict[str, dict] = field(default_factory=dict)
    changed_obs: set[tuple[str, str]] = field(default_factory=set)
    #: topic -> its partitions (``partitions``), until an edit of the rows or the drain;
    #: a mutation's catalogue asks once per candidate record
    _parts: dict = field(default_factory=dict, repr=False, compare=False)

    # -- reading and writing ---------------------------------------------------------

    @classmethod
    def load(cls, run_dir: Path | str) -> RunImage:
        lay = layout(Path(run_dir))
        config = read_plan_json(lay.config)
        histories = {}
        for path in sorted(lay.histories.glob("*.jsonl")):
            lines = []
            raw = path.read_bytes().split(b"\n")
            for i, line in enumerate(raw):
                if not line.strip():
                    continue
                try:
                    lines.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    if any(x.strip() for x in raw[i + 1:]):
                        raise RunFormatError(path, f"line {i + 1}: torn or not JSON") from None
            histories[path.stem] = lines
        obs = {}
        for rdir in sorted(p for p in lay.observations.iterdir() if p.is_dir()):
            for idir in sorted(p for p in rdir.iterdir() if p.is_dir()):
                files = sorted(idir.rglob("[!._]*.parquet"))
                if files:
                    tables = [pq.read_table(f) for f in files]
                    obs[(rdir.name, idir.name)] = pa.concat_tables(
                        tables, promote_options="default").combine_chunks()
        progress = {}
        for iso in ISOLATIONS:
            p = lay.progress(iso)
            if p.is_file():
                progress[iso] = orjson.loads(p.read_bytes())
        drain = orjson.loads(lay.drain.read_bytes())
        return cls(Path(run_dir), config, histories, obs, drain, progress)

    def clone(self) -> RunImage:
        # a history line is flat (mutations set its top-level fields): a copy of each
        # dict, not a deep copy (6 s per copy of a full-profile run's 72k lines here)
        histories = {pid: [dict(x) for x in lines] for pid, lines in self.histories.items()}
        return RunImage(self.root, copy.deepcopy(self.config), histories,
                        dict(self.obs), copy.deepcopy(self.drain), copy.deepcopy(self.progress),
                        set(self.changed_obs))  # fmt: skip

    def write(self, dest: Path) -> Path:
        """The run with this image's content at ``dest`` (which must not exist)."""
        shutil.copytree(self.root, dest, ignore=shutil.ignore_patterns(*SKIP))
        lay = layout(dest)
        lay.config.write_bytes(orjson.dumps(self.config, option=orjson.OPT_INDENT_2))
        for pid, lines in self.histories.items():
            lay.history(pid).write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
        for (reader, iso), table in self.obs.items():
            if (reader, iso) not in self.changed_obs:
                continue
            d = lay.observations_of(reader, iso)
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
            pq.write_table(table, d / "part-00000.parquet")
        lay.drain.write_bytes(orjson.dumps(self.drain, option=orjson.OPT_INDENT_2))
        for iso, doc in self.progress.items():
            lay.progress(iso).write_bytes(orjson.dumps(doc))
        return dest

    # -- what the run is -------------------------------------------------------------

    def topic_of(self, pid: str) -> str:
        return self.config["producers"][pid]["topic"]

    def mode_of(self, pid: str) -> str:
        return self.config["producers"][pid]["mode"]

    def expect_of(self, pid: str) -> str:
        spec = self.config["producers"][pid]
        return spec.get("expect", spec["mode"])

    @property
    def combos(self) -> list[tuple[str, str]]:
        return sorted(self.obs)

    def partitions(self, topic: str) -> list[int]:
        if topic not in self._parts:
            self._parts[topic] = self._partitions(topic)
        return list(self._parts[topic])

    def _partitions(self, topic: str) -> list[int]:
        keys = set(self.drain.get("end_offsets", {}).get("read_uncommitted", {}))
        out = {int(k.rpartition("-")[2]) for k in keys if k.rpartition("-")[0] == topic}
        for t in self.obs.values():
            m = pc.equal(t["topic"], topic)
            out |= set(t.filter(m)["partition"].to_pylist())
        return sorted(out)

    def end(self, topic: str, part: int) -> int:
        """The partition's read_uncommitted end offset (drain.json), else past the last row."""
        key = f"{topic}-{part}"
        end = self.drain.get("end_offsets", {}).get("read_uncommitted", {}).get(key)
        last = -1
        for t in self.obs.values():
            m = pc.and_(pc.equal(t["topic"], topic), pc.equal(t["partition"], part))
            v = pc.max(t.filter(m)["offset"]).as_py()
            last = max(last, -1 if v is None else v)
        return max(end if end is not None else 0, last + 1)

    def last_session(self, pid: str) -> int:
        return max((x.get("ses", 0) for x in self.histories[pid] if x.get("type") == "session"),
                   default=1)  # fmt: skip

    def next_seq(self, pid: str, p: int) -> int:
        seqs = [x["seq"] for x in self.histories[pid]
                if x.get("f") == "send" and x.get("p") == p and x.get("seq") is not None]
        return max(seqs, default=-1) + 1

    def next_txn(self, pid: str) -> int:
        txns = [x["txn"] for x in self.histories[pid] if x.get("txn") is not None]
        return max(txns, default=-1) + 1

    def clock(self, pid: str) -> int:
        return max((x.get("t", 0) for x in self.histories[pid]), default=0) + 1

    # -- edits -----------------------------------------------------------------------

    def set_obs(self, combo: tuple[str, str], table: pa.Table) -> None:
        self.obs[combo] = table
        self.changed_obs.add(combo)
        self._parts.clear()

    def shift(self, topic: str, part: int, start: int, k: int = 1) -> None:
        """Every offset >= ``start`` of (topic, part) moves by ``k``, everywhere."""
        for combo, t in self.obs.items():
            m = pc.and_(pc.and_(pc.equal(t["topic"], topic), pc.equal(t["partition"], part)),
                        pc.greater_equal(t["offset"], start))  # fmt: skip
            if pc.any(m).as_py():
                off = pc.if_else(m, pc.add(t["offset"], k), t["offset"])
                self.set_obs(combo, t.set_column(t.schema.get_field_index("offset"), "offset",
                                                 off.cast(t.schema.field("offset").type)))
        for pid, lines in self.histories.items():
            if self.config["producers"].get(pid, {}).get("topic") != topic:
                continue
            for x in lines:
                if (x.get("type") == "ok" and x.get("f") == "send" and x.get("p") == part
                        and x.get("offset") is not None and x["offset"] >= start):
                    x["offset"] += k
        self._move_ends(topic, part, start, k, ISOLATIONS)

    def grow(self, topic: str, part: int, k: int, isolations=ISOLATIONS) -> None:
        """The partition's end offsets (and the observer's positions) grow by ``k``: records
        appended at its end."""
        self._move_ends(topic, part, 0, k, isolations)

    def _move_ends(self, topic, part, start, k, isolations) -> None:
        self._parts.clear()
        key = f"{topic}-{part}"
        for section in ("end_offsets", "observer_positions"):
            for iso, ends in (self.drain.get(section) or {}).items():
                if iso in isolations and key in ends and ends[key] >= start:
                    ends[key] += k
        for iso, doc in self.progress.items():
            if iso not in isolations:
                continue
            for section in ("position", "written"):
                parts = (doc.get(section) or {}).get(topic) or {}
                if str(part) in parts and parts[str(part)] >= start:
                    parts[str(part)] += k

    def rows(self, combo, topic: str, part: int, offset: int) -> list[dict]:
        t = self.obs[combo]
        m = pc.and_(pc.and_(pc.equal(t["topic"], topic), pc.equal(t["partition"], part)),
                    pc.equal(t["offset"], offset))  # fmt: skip
        return t.filter(m).to_pylist()

    def drop(self, combo, topic: str, part: int, offset: int) -> None:
        t = self.obs[combo]
        m = pc.and_(pc.and_(pc.equal(t["topic"], topic), pc.equal(t["partition"], part)),
                    pc.equal(t["offset"], offset))  # fmt: skip
        if pc.any(m).as_py():
            self.set_obs(combo, t.filter(pc.invert(m)))

    def add(self, combo, rows: list[dict]) -> None:
        if not rows:
            return
        t = self.obs[combo]
        new = pa.Table.from_pylist([{f: r.get(f) for f in t.schema.names} for r in rows],
                                   t.schema)  # fmt: skip
        self.set_obs(combo, pa.concat_tables([t, new]))

    def row_like(self, combo, **values) -> dict:
        """A new observation row of ``combo``: every column present, ``values`` set."""
        reader, iso = combo
        base = {f: None for f in self.obs[combo].schema.names}
        base.update({"reader": reader, "isolation": iso, "run": self.config["run"],
                     "abort": False, "foreign": False, "error": None, "batch": -1})
        base.update(values)
        return base
