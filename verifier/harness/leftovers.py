"""What runs leave on an external cluster, and what a later cleanup may remove.

A run on an external cluster deletes its topics when it ends, after an error or a Ctrl-C
too (verifier.harness.environment). A run killed outright (``kill -9``, a lost machine)
cannot; so before a run creates anything there, :func:`claim` writes its run id and the
cluster into a record of this tool process (``.state/external-runs/<pid>.json``, with the
process's start time: a reused pid is not taken for it). :func:`release` drops a cluster's
runs from it once the environment has deleted (or, with ``--keep-topics``, kept) their
topics. ``verifier cleanup --bootstrap-servers`` then knows which runs on that cluster
were killed: those recorded by a tool process that is gone (:func:`dead_runs`).

On the cluster a run's things are found by name alone (verifier.rundata.naming): its
topics and group ids start with ``<run id>.``; nothing without that shape is ever touched
(:func:`remove_runs` refuses a run id of another shape). Transactional ids cannot be
deleted: the cluster expires them (``transactional.id.expiration.ms``, 7 days by default).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from verifier.harness.procs import start_time
from verifier.rundata.errors import UsageError
from verifier.rundata.jvm import PROJECT_ROOT
from verifier.rundata.naming import is_run_id, run_of

#: one record per tool process that ran on an external cluster
RECORDS = PROJECT_ROOT / ".state" / "external-runs"


def _record_path(folder: Path) -> Path:
    return Path(folder) / f"{os.getpid()}.json"


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {"owner": {}, "runs": []}


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)


def claim(env, run: str, folder: Path = RECORDS) -> None:
    """Record that this tool process is about to create ``run``'s topics on ``env``'s
    cluster (an external one only: a local cluster goes with its folder)."""
    if getattr(env, "name", None) != "external":
        return
    path = _record_path(folder)
    doc = _read(path)
    doc["owner"] = {"pid": os.getpid(), "start": start_time(os.getpid())}
    doc["runs"].append({"run": run, "bootstrap_servers": env.bootstrap_servers,
                        "keep": bool(getattr(env, "keep_topics", False))})
    _write(path, doc)


def release(bootstrap_servers: str, folder: Path = RECORDS) -> None:
    """This process's runs on that cluster are settled (their topics deleted or kept
    on purpose): cleanup has nothing to do for them."""
    path = _record_path(folder)
    if not path.exists():
        return
    doc = _read(path)
    doc["runs"] = [r for r in doc["runs"] if r.get("bootstrap_servers") != bootstrap_servers]
    if doc["runs"]:
        _write(path, doc)
    else:
        path.unlink(missing_ok=True)


def _alive(owner: dict) -> bool:
    pid = owner.get("pid")
    return bool(pid) and start_time(pid) is not None and \
        (owner.get("start") is None or start_time(pid) == owner.get("start"))


@dataclass
class Recorded:
    """The runs recorded for one cluster: killed ones (cleanup removes them) and ones
    whose tool still runs (never touched)."""

    dead: list[str] = field(default_factory=list)
    running: dict[str, int] = field(default_factory=dict)  # run -> its tool's pid
    records: list[Path] = field(default_factory=list)  # records of dead tools


def recorded(bootstrap_servers: str, folder: Path = RECORDS) -> Recorded:
    """What this machine's records say about runs on that cluster."""
    out = Recorded()
    for path in sorted(Path(folder).glob("*.json")) if Path(folder).is_dir() else []:
        doc = _read(path)
        alive = _alive(doc.get("owner", {}))
        for r in doc.get("runs", []):
            if r.get("bootstrap_servers") != bootstrap_servers or r.get("keep"):
                continue
            if alive:
                out.running[r["run"]] = doc["owner"]["pid"]
            elif r["run"] not in out.dead:
                out.dead.append(r["run"])
        if not alive:
            out.records.append(path)
    return out


def forget(bootstrap_servers: str, records: Iterable[Path]) -> None:
    """Drop that cluster's runs from dead tools' records (cleanup removed them)."""
    for path in records:
        doc = _read(path)
        doc["runs"] = [r for r in doc.get("runs", [])
                       if r.get("bootstrap_servers") != bootstrap_servers]
        if doc["runs"]:
            _write(path, doc)
        else:
            path.unlink(missing_ok=True)


@dataclass
class OnCluster:
    """The names of runs of this tool found on a cluster, by run id."""

    topics: dict[str, list[str]] = field(default_factory=dict)
    groups: dict[str, list[str]] = field(default_factory=dict)

    @property
    def runs(self) -> list[str]:
        return sorted(set(self.topics) | set(self.groups))


def group_by_run(names: Iterable[str]) -> dict[str, list[str]]:
    """Names of runs of this tool, by run id; every other name left out."""
    out: dict[str, list[str]] = {}
    for name in sorted(names):
        run = run_of(name)
        if run is not None:
            out.setdefault(run, []).append(name)
    return out


def on_cluster(admin) -> OnCluster:
    """Every topic and consumer group of a run of this tool on the cluster (metadata and
    ListGroups only: reads, never writes)."""
    groups = [g["group_id"] if isinstance(g, dict) else g[0] for g in admin.list_groups()]
    return OnCluster(group_by_run(admin.list_topics()), group_by_run(groups))


def check_run_ids(runs: Iterable[str]) -> None:
    """Refuse anything that is not a run id of this tool: cleanup removes only what a run
    created, by its prefix."""
    bad = [r for r in runs if not is_run_id(r)]
    if bad:
        raise UsageError(f"refused: {', '.join(bad)}: not a run id of this tool "
                         "(verifier-<scenario>-<UTC start>-s<seed>); cleanup removes only "
                         "the topics and groups a run created, by its prefix <run id>.")


def remove_runs(admin, found: OnCluster, runs: Iterable[str], timeout_s: float = 30
                ) -> list[str]:
    """Delete the topics and consumer groups of ``runs`` (run ids of this tool only);
    returns one line per thing removed."""
    runs = list(runs)
    check_run_ids(runs)
    said = []
    topics = [t for r in runs for t in found.topics.get(r, [])]
    groups = [g for r in runs for g in found.groups.get(r, [])]
    if topics:
        admin.delete_topics(topics, timeout_ms=int(timeout_s * 1000))
        said += [f"deleted topic {t}" for t in topics]
    if groups:
        admin.delete_groups(groups)
        said += [f"deleted group {g}" for g in groups]
    return said
