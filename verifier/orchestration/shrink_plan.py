"""What `verifier shrink` needs of a FAILed run folder: its plan and scenario as run, its
fingerprint, and the scenario written back as a TOML file `verifier chaos` reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from verifier.orchestration.shrink_result import Fingerprint
from verifier.rundata.errors import UsageError
from verifier.rundata.formats import RunFormatError
from verifier.rundata.layout import RunLayout
from verifier.rundata.plan import RunPlan, read_plan


@dataclass(frozen=True)
class FailedRun:
    run_dir: Path
    plan: RunPlan
    verdict: dict
    fingerprint: Fingerprint
    #: the preset modes the column runs on (empty for a pipeline column)
    column_modes: tuple[str, ...]

    @property
    def spec(self) -> dict:
        """The scenario as it ran (``Scenario.to_json()``: the profile's scaling applied)."""
        return self.plan.scenario_spec

    @property
    def seconds(self) -> float:
        return float((self.verdict.get("phases") or {}).get("total_s") or 300.0)


def load_failed_run(run_dir: Path, column: str | None = None,
                    kind: str | None = None) -> FailedRun:
    """The run folder of one FAILed scenario run and the fingerprint to keep; every
    reason it cannot be shrunk is a :class:`UsageError` saying what to give instead."""
    lay = RunLayout(run_dir)
    verdict_path = lay.verdict
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir} is not a folder")
    doc = _read(verdict_path, run_dir)
    if "runs" in doc and "grid" in doc:
        failed = [r["run_dir"] for r in doc["runs"] if r.get("exit_code") == 1
                  and r.get("run_dir")]
        hint = f"; its FAILed runs: {', '.join(failed)}" if failed else " (none FAILed)"
        raise UsageError(f"{run_dir} is the output folder of a chaos matrix: give one of "
                         f"its run folders{hint}")
    plan = _read_plan(lay.config, run_dir)
    if not plan.scenario_spec:
        raise UsageError(f"{run_dir}/config.json has no scenario_spec (written by an older "
                         "version): its scenario cannot be rebuilt")
    columns = {c["name"]: c for c in doc.get("columns", ())}
    failed = [n for n, c in columns.items() if c.get("verdict") == "FAIL"]
    if doc.get("interrupted"):
        raise UsageError(f"{run_dir}: the run was interrupted ({doc['interrupted']}): "
                         "nothing to shrink")
    if column is None:
        if not failed:
            said = ", ".join(f"{n} {c.get('verdict')}" for n, c in columns.items())
            raise UsageError(f"{run_dir} did not FAIL ({said or 'no columns'}): only a "
                             "FAILed run can be shrunk")
        column = failed[0]
    elif column not in columns:
        raise UsageError(f"unknown column {column!r}; this run's columns: "
                         f"{', '.join(columns) or 'none'} (FAILed: "
                         f"{', '.join(failed) or 'none'})")
    elif column not in failed:
        raise UsageError(f"column {column} did not FAIL in this run "
                         f"({columns[column].get('verdict')}); FAILed: "
                         f"{', '.join(failed) or 'none'}")
    forbidden = list(columns[column].get("forbidden") or ())
    if kind is None:
        kind = forbidden[0]
    elif kind not in forbidden:
        raise UsageError(f"column {column} did not show {kind!r} as forbidden; it showed: "
                         f"{', '.join(forbidden)}")
    col = columns[column]
    modes = () if column.startswith(("pipeline:", "user:")) else (col.get("mode"),)
    return FailedRun(run_dir, plan, doc, Fingerprint(column, kind),
                     tuple(m for m in modes if m))


def _not_finished(path: Path, run_dir: Path) -> UsageError:
    return UsageError(f"{run_dir} is not a finished run folder (no {path.name}): give the "
                      "folder a `verifier chaos` run printed")


def _read_plan(path: Path, run_dir: Path) -> RunPlan:
    if not path.is_file():
        raise _not_finished(path, run_dir)
    try:
        return read_plan(path)
    except RunFormatError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.problem}") from None


def _read(path: Path, run_dir: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise _not_finished(path, run_dir) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read it: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not a JSON object")
    return doc


# ----- the scenario as a TOML file ------------------------------------------------------


def scenario_toml(spec: dict, header: list[str] = ()) -> str:
    """A ``Scenario.to_json()`` dict as the scenario file that parses back to it
    (``verifier.orchestration.scenario.parse_scenario``); ``header``: comment lines."""
    out = [f"# {line}" if line else "#" for line in header]
    if out:
        out.append("")
    out.append(f"description = {_value(spec.get('description', ''))}")
    out += ["", "[workload]"]
    for key, value in spec["workload"].items():
        out.append(f"{key} = {_value(value)}")
    options = {"sink": spec.get("sink", "exactly-once"),
               "drain_timeout_s": spec.get("drain_timeout_s", 120.0),
               **({"proxy_replication": True} if spec.get("proxy_replication") else {})}
    out += ["", "[options]"] + [f"{k} = {_value(v)}" for k, v in options.items()]
    for table in ("connections", "clients"):
        if spec.get(table):
            out += ["", f"[{table}]"]
            out += [f"{_key(k)} = {_value(v)}" for k, v in spec[table].items()]
    broker = spec.get("broker")
    if broker:
        out += ["", "[broker]", f"apply = {_value(broker['apply'])}"]
        if broker["apply"] == "dynamic":
            out.append(f"at = {_value(broker['at'])}")
        out.append(f"settings = {_value(broker['settings'])}")
    for fault in spec.get("faults") or ():
        out += ["", "[[faults]]"] + [f"{_key(k)} = {_value(v)}" for k, v in fault.items()]
    return "\n".join(out) + "\n"


def _key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "").isalnum() and key.isascii()
    return key if bare else json.dumps(key)


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        if "\n" in value and '"""' not in value and "\\" not in value:
            return '"""\n' + value + '"""'
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(v)}"
                                for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {value!r}")
