"""Load a run folder (docs/formats.md §2-§5) into :class:`RunData`.

Histories are parsed by pyarrow's multi-threaded JSON reader (C++) against an explicit
schema and handed to Spark as one Arrow table: much faster than Python-level parsing or
Spark's JSON source on two cores. Only when pyarrow rejects a file do we scan it line by
line, to name the torn line. Observations are read by Spark where they lie, so a run on a
cluster file system is never pulled through the driver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from verifier.judge.model import ISOLATIONS, Drain, ProducerSpec, RunConfig, RunData
from verifier.rundata.columns import pipeline_column
from verifier.rundata.formats import RunFormatError, read_json
from verifier.rundata.history import read_histories
from verifier.rundata.layout import RunLayout
from verifier.rundata.nemesis import read_nemesis
from verifier.rundata.plan import RunPlan, read_plan
from verifier.rundata.startfail import describe, read_start_failures

#: observation columns and the Spark type each is cast to
OBSERVATION_COLUMNS = {
    "reader": "string", "isolation": "string", "topic": "string", "partition": "int",
    "offset": "bigint", "run": "string", "pid": "string", "ses": "int", "p": "int",
    "seq": "bigint", "txn": "bigint", "abort": "boolean", "ts_send": "bigint",
    "ts_broker": "bigint", "foreign": "boolean", "error": "string",
}  # fmt: skip

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass
class RunFiles:
    """Everything of a run folder that is read without Spark (validated on read)."""

    config: RunConfig
    history: pa.Table
    started: dict[str, bool]
    combos: list[tuple[str, str]]
    drain: Drain
    nemesis: list[dict]
    start_failures: dict[str, str] = field(default_factory=dict)


def read_run_files(run_dir: Path | str) -> RunFiles:
    """Read and validate every small file of a run: fails fast, before Spark starts."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunFormatError(run_dir, "not a run folder (no such directory)")
    where = RunLayout(run_dir)
    config = load_config(where.config)
    history, started = read_histories(where.histories, config.run, config.producers)
    return RunFiles(
        config=config, history=history, started=started,
        combos=observation_combos(where.observations),
        drain=load_drain(where.drain),
        nemesis=read_nemesis(where.nemesis, config.run),
        start_failures={pid: describe(e) for pid, e
                        in read_start_failures(where.start_failures).items()},
    )  # fmt: skip


def load_run(spark, run_dir: Path | str, files: RunFiles | None = None) -> RunData:
    """Read every input file of a finished run; raise :class:`RunFormatError` on bad input."""
    f = files or read_run_files(run_dir)
    return RunData(
        config=f.config, events=None, history=f.history,
        observations=load_observations(spark, RunLayout(run_dir).observations, f.combos),
        combos=f.combos, drain=f.drain, drain_partitions=drain_frame(spark, f.drain),
        started=f.started, nemesis=f.nemesis, start_failures=f.start_failures,
    )  # fmt: skip


def load_config(path: Path) -> RunConfig:
    """config.json as the judge reads it: the plan (:func:`verifier.rundata.plan.read_plan`,
    the one parser) seen through :func:`config_of`."""
    return config_of(read_plan(path), path)


def config_of(plan: RunPlan, path: Path | str = "config.json") -> RunConfig:
    """The judge's view of a plan (run id, scenario, sink, the producers with their modes,
    the pipelines with their expectation rows), checked: every mode and sink one the
    expectation table knows. The one place a :class:`RunConfig` is made from a plan."""
    from verifier.judge.expectations import PRESETS, SINKS

    path = Path(path)
    producers = {pid: ProducerSpec(pid=pid, mode=p.mode, expect=p.expect, topic=p.topic,
                                   input_topic=p.input_topic)
                 for pid, p in plan.producers.items()}
    try:
        pipelines = pipeline_specs(plan.pipelines)
        apps = app_specs(plan.apps)
    except (KeyError, TypeError, AttributeError) as exc:
        raise RunFormatError(path, f"missing or bad field: {exc}") from None
    config = RunConfig(run=plan.run, scenario=plan.scenario, sink=plan.sink,
                       producers=producers, seed=plan.seed, pipelines=pipelines,
                       apps=apps)
    for p in producers.values():
        if p.expect not in PRESETS:
            raise RunFormatError(path, f"producer {p.pid}: unknown mode {p.expect!r}")
    if config.sink not in SINKS:
        raise RunFormatError(path, f"unknown sink {config.sink!r} (one of {', '.join(SINKS)})")
    if not producers:
        raise RunFormatError(path, "empty run: no producers")
    return config


def pipeline_specs(entries: dict) -> dict:
    """config.json ``pipelines``: name -> PipelineSpec (its column and expectation row)."""
    from verifier.judge.expectations import PIPELINE_GUARANTEES, pipeline_row
    from verifier.judge.pipeline import PipelineSpec

    out = {}
    for name, e in entries.items():
        if e.get("guarantee") not in PIPELINE_GUARANTEES:
            raise KeyError(f"pipeline {name}: guarantee {e.get('guarantee')!r}")
        out[name] = PipelineSpec(name, pipeline_column(name),
                                 pipeline_row(e["guarantee"], e.get("fail_on_data_loss", True)),
                                 str(e.get("isolation", "read_committed")),
                                 **_oracle_of(e))
    return out


def app_specs(entries: dict) -> dict:
    """config.json ``apps``: name -> AppSpec (its columns and expectation row)."""
    from verifier.judge.application import AppSpec
    from verifier.judge.expectations import APP_GUARANTEES

    out = {}
    for name, e in entries.items():
        if e.get("guarantee") not in APP_GUARANTEES:
            raise KeyError(f"app {name}: guarantee {e.get('guarantee')!r}")
        out[name] = AppSpec(name, e["guarantee"], tuple(e.get("input_topics") or ()),
                            str(e.get("output_topic") or ""),
                            str(e.get("oracle") or "identity"), e.get("preset"))
    return out


def _oracle_of(entry: dict) -> dict:
    """A pipeline entry's oracle fields (issue 46; absent in older runs: identity)."""
    return {"oracle": str(entry.get("oracle") or "identity"),
            "trace_column": str(entry.get("trace_column") or "value"),
            "key_columns": tuple(entry.get("key_columns") or ()),
            "ignore_columns": tuple(entry.get("ignore_columns") or ()),
            "topics": tuple(sorted((entry.get("input_topics") or {}).values()))}


def observation_combos(folder: Path) -> list[tuple[str, str]]:
    """(reader, isolation) folders holding Parquet files; checks the format marker."""
    read_json(RunLayout(folder.parent).observations_format, "observations")
    combos = []
    for rdir in sorted(p for p in folder.iterdir() if p.is_dir()):
        for idir in sorted(p for p in rdir.iterdir() if p.is_dir()):
            if idir.name not in ISOLATIONS or not _NAME.match(rdir.name):
                raise RunFormatError(idir, "unexpected folder (expected <reader>/<isolation>)")
            if any(idir.rglob("[!._]*.parquet")):  # dot files are being written
                combos.append((rdir.name, idir.name))
    if not combos:
        raise RunFormatError(folder, "empty run: no observation Parquet files")
    return combos


def load_observations(spark, folder: Path, combos: list[tuple[str, str]]):
    """Observation rows of every reader and isolation level, typed as format 1."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    frames = []
    for reader, iso in combos:
        d = folder / reader / iso
        try:
            if (d / "_spark_metadata").is_dir():
                # a streaming file sink: only files its log committed are part of the output
                df = spark.read.parquet(str(d))
            else:
                df = (
                    spark.read.option("recursiveFileLookup", "true")
                    .option("pathGlobFilter", "[!._]*.parquet")
                    .parquet(str(d))
                )
            missing = sorted(set(OBSERVATION_COLUMNS) - set(df.columns))
        except PySparkException as exc:
            raise RunFormatError(d, f"unreadable Parquet ({str(exc).splitlines()[0]})") from None
        if missing:
            raise RunFormatError(d, f"observation columns missing: {missing}")
        frames.append(
            df.select(*[F.col(c).cast(t).alias(c) for c, t in OBSERVATION_COLUMNS.items()])
        )
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def load_drain(path: Path) -> Drain:
    """drain.json (docs/formats.md §4.2, format 2 or 1): completion, end offsets, what was
    behind."""
    doc = read_json(path, "drain", versions=(1,))
    try:
        ends = doc.get("end_offsets") or {}
        rc, ru = ends.get("read_committed", {}), ends.get("read_uncommitted", {})
        parts = []
        for key in sorted(set(rc) & set(ru)):
            topic, _, part = key.rpartition("-")  # "<topic>-<partition>"
            parts.append({"topic": topic, "partition": int(part),
                          "end_read_committed": int(rc[key]),
                          "end_read_uncommitted": int(ru[key])})  # fmt: skip
        drain = Drain(completed=bool(doc["completed"]), partitions=parts,
                      behind=list(doc.get("behind", [])), deadline_s=doc.get("deadline_s"),
                      per_partition=doc["version"] >= 2,
                      log_start={(k.rpartition("-")[0], int(k.rpartition("-")[2])): int(o)
                                 for k, o in (doc.get("log_start_offsets") or {}).items()})
        drain.behind_keys()
        return drain
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RunFormatError(path, f"missing or bad field: {exc}") from None


def drain_frame(spark, drain: Drain):
    """drain.json's per-partition end offsets as a DataFrame (the hanging-txn check's input)."""
    rows = [(str(p["topic"]), int(p["partition"]), int(p["end_read_committed"]),
             int(p["end_read_uncommitted"])) for p in drain.partitions]  # fmt: skip
    schema = "topic string, partition int, end_read_committed bigint, end_read_uncommitted bigint"
    return spark.createDataFrame(rows, schema)
