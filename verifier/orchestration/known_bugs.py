"""Known bugs as data, and their grid: does each documented status reproduce?

A documented Kafka bug (``scenarios/_known_bugs.toml``) is a record: its id, its
mechanism, the schedule that forces it (a scenario whose holds make the interleaving
happen every time) and its combinations (broker version, client, broker settings) with
their documented status, ``affected`` or ``fixed``. The ``known-bugs`` profile runs every
combination (``--repeat N`` times), one fresh local cluster per broker version, the
clients of a version side by side; a combination's run *shows* the bug when one of the
bug's columns (the client's) is FAIL, is *clean* when they all PASS, and says nothing
otherwise. The grid compares the runs with the documented status: affected must show in
every run, fixed must be clean in every run. A mismatch either way is a finding (exit 1);
a run that says nothing leaves the row open (exit 2).
"""

from __future__ import annotations

import re
import sys
import time
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from verifier.assess import exitcodes as X
from verifier.judge.verdict import FAIL, PASS, tally, worst_of
from verifier.orchestration.known_bug_apps import build, parse_app_spec, with_app
from verifier.orchestration.scenario import (
    SCENARIO_DIR,
    BrokerSettings,
    Scenario,
    load_scenario,
)
from verifier.rundata.errors import UsageError

KNOWN_BUGS = SCENARIO_DIR / "_known_bugs.toml"
#: ``fenced``: the bug's window is forced on the client's own retry path, which the broker
#: refuses (kafka-python re-initialises after an EndTxn timeout): read as ``fixed``
STATUSES = ("affected", "fixed", "fenced")
#: a combination's runs against its documented status
MATCH, MISMATCH, OPEN = "yes", "NO", "open"


@dataclass(frozen=True)
class Combination:
    """One place a bug is documented as present or absent."""

    kafka: str
    client: str
    status: str
    #: broker settings for the run (``apply``: dynamic, or start: server.properties)
    broker: tuple[tuple[str, str], ...] = ()
    apply: str = "dynamic"
    #: feature levels the cluster runs at (``transaction.version``), set with Kafka's
    #: feature tool after the start: a cluster of their own
    features: tuple[tuple[str, int], ...] = ()
    #: names the scenario variant that carries the settings (``kafka-14402-verification-off``)
    variant: str = ""
    note: str = ""
    #: a schedule of its own (a scenario file), where the bug's cannot reach its window on
    #: this combination (``kafka-17754b-tv2``: no AddPartitionsToTxn at transaction version 2)
    scenario: str = ""
    #: an application column (``streams-count-eos:4.1.2``: verifier.orchestration.known_bug_apps)
    app: str = ""

    def setting_text(self) -> str:
        return ", ".join([f"{k}={v}" for k, v in self.broker] +
                         [f"{k}={v} (feature)" for k, v in self.features]) or "defaults"


@dataclass(frozen=True)
class KnownBug:
    id: str
    title: str
    mechanism: str
    schedule: str
    scenario: str
    #: the mode columns (without the client) where the consequence shows
    columns: tuple[str, ...]
    combinations: tuple[Combination, ...]
    also: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    def run_name(self, combo: Combination) -> str:
        """The scenario a combination runs: the bug's (or the combination's own schedule),
        or its variant with the settings."""
        base = combo.scenario or self.scenario
        return f"{base}-{combo.variant}" if combo.variant else base


_BUG_KEYS = {"id", "also", "title", "mechanism", "schedule", "scenario", "columns", "sources",
             "combination"}
_COMBO_KEYS = {"kafka", "client", "status", "broker", "apply", "variant", "note", "features",
               "scenario", "app"}
_VARIANT = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def _setting(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_known_bugs(text: str, source: str = "<string>") -> list[KnownBug]:
    """The bugs of a ``_known_bugs.toml`` text, checked (UsageError names what is wrong)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{source}: not valid TOML: {exc}") from exc
    bugs = []
    for i, b in enumerate(data.get("bug") or []):
        where = f"{source} bug {b.get('id', i + 1)}"
        unknown = set(b) - _BUG_KEYS
        missing = {"id", "scenario", "columns", "combination"} - set(b)
        if unknown or missing:
            raise UsageError(f"{where}: unknown keys {sorted(unknown)}, missing {sorted(missing)}")
        combos = []
        for c in b["combination"]:
            if set(c) - _COMBO_KEYS or not {"kafka", "client", "status"} <= set(c):
                raise UsageError(f"{where}: a combination needs kafka, client and status and "
                                 f"may have {sorted(_COMBO_KEYS)}: {c}")
            if c["status"] not in STATUSES:
                raise UsageError(f"{where}: status must be one of {STATUSES}, not {c['status']!r}")
            settings = (c.get("broker") or {}).items()
            broker = tuple(sorted((str(k), _setting(v)) for k, v in settings))
            variant = str(c.get("variant", ""))
            if broker and not _VARIANT.fullmatch(variant):
                raise UsageError(f"{where}: a combination with broker settings names its "
                                 "variant (lower-case words joined by -), e.g. variant = "
                                 "\"verification-off\"")
            levels = c.get("features") or {}
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                       for v in levels.values()):
                raise UsageError(f"{where}: features are levels, whole numbers >= 0: {levels}")
            features = tuple(sorted((str(k), int(v)) for k, v in levels.items()))
            if c.get("apply", "dynamic") not in ("dynamic", "start"):
                raise UsageError(f"{where}: apply must be dynamic or start")
            app = parse_app_spec(str(c["app"]), where).text if "app" in c else ""
            combos.append(Combination(kafka=str(c["kafka"]), client=str(c["client"]),
                                      status=c["status"], broker=broker,
                                      apply=c.get("apply", "dynamic"), variant=variant,
                                      features=features, scenario=str(c.get("scenario", "")),
                                      note=str(c.get("note", "")), app=app))
        bugs.append(KnownBug(id=str(b["id"]), title=str(b.get("title", "")),
                             mechanism=str(b.get("mechanism", "")),
                             schedule=str(b.get("schedule", "")), scenario=str(b["scenario"]),
                             columns=tuple(b["columns"]), combinations=tuple(combos),
                             also=tuple(b.get("also", ())), sources=tuple(b.get("sources", ()))))
    return bugs


def load_known_bugs(path: Path = KNOWN_BUGS) -> list[KnownBug]:
    return parse_known_bugs(path.read_text(), str(path.name))


@dataclass
class VersionPlan:
    """What runs on one broker version's cluster: the scenarios (variants carry their
    broker settings), the clients side by side, and the grid's cells."""

    kafka: str
    features: tuple[tuple[str, int], ...] = ()
    #: the application column its runs have (a cluster of its own per application release)
    app: str = ""
    clients: list[str] = field(default_factory=list)
    scenarios: list[Scenario] = field(default_factory=list)
    cells: list[tuple[KnownBug, Combination]] = field(default_factory=list)

    @property
    def key(self) -> str:
        """``4.1.1`` or ``4.1.1+transaction.version=0``: its outputs' folder name too."""
        app = f"+app={parse_app_spec(self.app).slug}" if self.app else ""
        return self.kafka + "".join(f"+{k}={v}" for k, v in self.features) + app


def plan_known_bugs(bugs: list[KnownBug], scenarios: dict[str, Scenario],
                    versions: list[str] | None = None,
                    clients: list[str] | None = None, load=None) -> list[VersionPlan]:
    """The runs of the known-bugs grid, per broker version in the order first named:
    ``scenarios`` are the bugs' scenarios as the profile scales them (a bug whose scenario
    is not there is left out: ``--scenario`` picks bugs); ``versions`` and ``clients``
    keep only those combinations; ``load``: a combination's own schedule by name
    (default: the scenario file as it is). Variants run after the scenario without
    settings, so a dynamic setting never outlives its run into another one."""
    from producers.clients import same_client, selects

    plans: dict[tuple, VersionPlan] = {}
    for bug in bugs:
        base = scenarios.get(bug.scenario)
        if base is None:
            continue
        for combo in bug.combinations:
            if (versions and combo.kafka not in versions) or \
                    (clients and not selects(clients, combo.client)):
                continue
            own = base if not combo.scenario else \
                scenarios.get(combo.scenario) or (load or load_scenario)(combo.scenario)
            key = (combo.kafka, combo.features, combo.app)
            plan = plans.setdefault(key, VersionPlan(combo.kafka, combo.features, combo.app))
            if not any(same_client(combo.client, c) for c in plan.clients):
                plan.clients.append(combo.client)
            name = bug.run_name(combo)
            if name not in [s.name for s in plan.scenarios]:
                scenario = own if not combo.broker else replace(
                    own, name=name, broker=BrokerSettings(dict(combo.broker), combo.apply))
                plan.scenarios.append(scenario)
            plan.cells.append((bug, combo))
    for plan in plans.values():
        plan.scenarios.sort(key=lambda s: s.broker is not None)
    order = {v: i for i, v in enumerate(dict.fromkeys(
        list(versions or []) + [k[0] for k in plans]))}
    return sorted(plans.values(), key=lambda p: (order[p.kafka], p.features, p.app))


def row_columns(doc: dict, bug: KnownBug, client: str) -> list[dict]:
    """The bug's columns of ``client`` in one run's document."""
    from producers.clients import label_of
    from verifier.report.versions import _client_of

    cols = [(_client_of(doc, col), col) for col in doc.get("columns") or []]
    wanted = label_of([label for (label, _), _ in cols], client)  # java:3.9.1 -> java 3.9.1
    return [col for (label, name), col in cols if label == wanted and name in bug.columns]


def run_outcome(doc: dict, bug: KnownBug, client: str) -> str:
    """One run's outcome for a bug and client: FAIL when one of the bug's columns of that
    client failed, PASS when they all passed, else the worst of them (UNKNOWN, NOT
    EXERCISED, SKIPPED: the run says nothing about the bug)."""
    verdicts = [col["verdict"] for col in row_columns(doc, bug, client)]
    if FAIL in verdicts:
        return FAIL
    return worst_of(verdicts) if verdicts else "UNKNOWN"


def forbidden_anomalies(columns: list[dict]) -> list[dict]:
    """The forbidden anomalies the columns found (their verdict's samples)."""
    return [a for col in columns for g in (col.get("anomalies") or {}).values()
            if isinstance(g, dict) and g.get("expectation") == "forbidden" and g.get("count")
            for a in g.get("sample") or []]


def run_reading(status: str, outcome: str, evidence: dict) -> str:
    """One run against the documented status, on its own evidence
    (:mod:`verifier.report.forced_evidence`): ``yes`` when an affected run's FAIL is tied
    to the forced request, or a fixed (fenced) run's PASS shows the forced request refused
    inside its window; ``NO`` when it contradicts the status (a FAIL on a fixed row, a PASS
    on an affected row whose forced request went into its window); else ``open``."""
    wanted, contrary = (FAIL, PASS) if status == "affected" else (PASS, FAIL)
    if outcome == contrary and (status != "affected" or evidence.get("in_window")):
        return MISMATCH
    if outcome == wanted and not evidence.get("open"):
        return MATCH
    return OPEN


def status_match(status: str, outcomes: list[str], evidence: list[dict]) -> str:
    """``yes`` when every run reproduced the documented status on its own evidence,
    ``NO`` when one contradicts it, else ``open`` (:func:`run_reading`)."""
    readings = [run_reading(status, o, e) for o, e in zip(outcomes, evidence, strict=True)]
    if MISMATCH in readings:
        return MISMATCH
    return MATCH if readings and all(r == MATCH for r in readings) else OPEN


def known_bug_grid(plans: list[VersionPlan], docs: dict[str, list[dict]]) -> dict:
    """The grid as data: a row per bug and combination, with the outcomes of its runs
    (``docs``: per plan key, its run documents), whether they match the
    documented status, the held requests' answers and the runs' wall time;
    ``exit_code`` 1 on a mismatch, 2 on an open row, else 0."""
    from producers.clients import client_slug, column_suffix, label_of
    from verifier.report.forced_evidence import forced_by, load_run_evidence
    from verifier.report.versions import held_answers

    rows = []
    for plan in plans:
        for bug, combo in plan.cells:
            runs = [d for d in docs.get(plan.key, []) if d.get("scenario") == bug.run_name(combo)]
            outcomes = [run_outcome(d, bug, combo.client) for d in runs]
            label = next((x for d in runs if (x := label_of(d.get("clients") or [],
                                                           combo.client))), combo.client)
            answers = [held_answers(d.get("run_dir")) for d in runs]
            key = client_slug(column_suffix(combo.client, plan.clients)) \
                if len(plan.clients) > 1 else ""
            evidence = [{"run": d.get("run_dir"), "outcome": o, **load_run_evidence(
                d.get("run_dir"), combo.status, o, key,
                forbidden_anomalies(row_columns(d, bug, combo.client)), str(d.get("run") or ""))}
                for d, o in zip(runs, outcomes, strict=True)]
            rows.append({
                "bug": bug.id, "kafka": combo.kafka, "client": label,
                "setting": combo.setting_text(), "status": combo.status,
                "outcomes": outcomes,
                "text": " · ".join(f"{v} {n}/{len(outcomes)}" for v, n in tally(outcomes))
                or "not run",
                "match": status_match(combo.status, outcomes, evidence),
                "forced": forced_by(evidence), "evidence": evidence,
                "held": " | ".join(a.get(key) or a.get("") or "-" for a in answers) or "-",
                "wall_s": [round(float((d.get("phases") or {}).get("total_s", 0)), 1)
                           for d in runs],
                "runs": [d.get("run_dir") for d in runs], "note": combo.note})
    matches = [r["match"] for r in rows]
    grid = {"rows": rows}
    X.set_known_bugs(grid, mismatch=MISMATCH in matches, open_rows=OPEN in matches)
    return grid


def cluster_times(plans: list[VersionPlan], docs: dict[str, list[dict]],
                  walls: dict[str, float]) -> list[dict]:
    """Per cluster (a plan): its wall time, the part its runs took (each run's own
    ``total_s``) and the rest, which is the version's set-up (jars, start, topics, feature
    levels) and its stop: the grid's s/run leaves it out, so it is reported apart."""
    rows = []
    for plan in plans:
        if plan.key not in walls:
            continue
        runs = sum(float((d.get("phases") or {}).get("total_s", 0)) for d in docs.get(plan.key, []))
        wall = walls[plan.key]
        rows.append({"cluster": plan.key, "runs": len(docs.get(plan.key, [])),
                     "wall_s": round(wall, 1), "runs_s": round(runs, 1),
                     "setup_s": round(max(wall - runs, 0.0), 1)})
    return rows


def plan_options(opts, plan: VersionPlan):
    """The options of a plan's runs: its output folder (``OUT/kafka-<key>``), its clients
    side by side (one client: that client's columns, named as a single client's are)."""
    clients = tuple(plan.clients) if len(plan.clients) > 1 else ()
    return replace(opts, out=Path(opts.out) / f"kafka-{plan.key}", clients=clients,
                   client=plan.clients[0])


def run_known_bugs(make_env, plans: list[VersionPlan], opts, spark, out=sys.stdout) -> int:
    """Run every version's plan on a fresh local cluster of that version (outputs in
    ``OUT/kafka-<version>/``), then print the grid and write ``OUT/known-bugs.json``.
    The exit code is the grid's: an affected combination that FAILs is what it should do."""
    from verifier.harness.features import FeatureLevels
    from verifier.orchestration.chaos import run_matrix
    from verifier.report.known_bugs import render_known_bug_grid, write_known_bug_grid

    t0 = time.monotonic()
    build(plans)  # the applications' releases, before the first cluster starts
    docs: dict[str, list[dict]] = {}
    walls: dict[str, float] = {}

    def finish(interrupted: bool) -> dict:
        """The grid of the runs so far, written and printed: an interrupted profile (hours
        at --repeat 3) keeps what its finished runs showed, the rest ``not run``."""
        grid = known_bug_grid(plans, docs)
        grid["clusters"] = cluster_times(plans, docs, walls)
        write_known_bug_grid(grid, Path(opts.out) / "known-bugs.json",
                             {"profile": opts.profile, "seed": opts.seed,
                              "repeat": opts.repeat,
                              **({"interrupted": True} if interrupted else {})})
        print("\n=== known bugs: documented status against the runs"
              + (" (interrupted: the runs so far)" if interrupted else ""), file=out)
        print(render_known_bug_grid(grid), file=out)
        print(f"\nwall time {time.monotonic() - t0:.0f}s; outputs: {opts.out}/known-bugs.json "
              f"and {opts.out}/kafka-<version>/", file=out, flush=True)
        return grid

    try:
        for plan in plans:
            levels = "".join(f", {k} {v}" for k, v in plan.features)
            print(f"\n##### Kafka {plan.kafka}{levels}: "
                  f"{', '.join(s.name for s in plan.scenarios)} ({', '.join(plan.clients)})",
                  file=out, flush=True)
            t1 = time.monotonic()
            run_opts = with_app(plan_options(opts, plan), plan.app)
            collected: list[dict] = []
            docs[plan.key] = collected  # the runs done so far, if the profile is interrupted
            env = make_env(plan.kafka)
            if plan.features:
                env = FeatureLevels(env, dict(plan.features), out)
            try:
                run_matrix(env, plan.scenarios, run_opts, spark, out, collect=collected)
            except Exception as exc:  # noqa: BLE001 - one version's cluster failing is open rows
                print(f"Kafka {plan.key} could not run: {type(exc).__name__}: {exc}", file=out)
            finally:
                walls[plan.key] = time.monotonic() - t1
            print(f"Kafka {plan.key}: {walls[plan.key]:.0f}s", file=out, flush=True)
    except KeyboardInterrupt:
        finish(interrupted=True)
        raise
    return finish(interrupted=False)["exit_code"]
