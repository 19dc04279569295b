"""A run folder read once: the facts every verdict of the run is made and finished with.

The plan (``config.json``), the drain (``drain.json``), the nemesis history, the
generators that never started, the interruption mark, the clients and the broker
version are read here, once per run, by :func:`read_facts`; the live pass, the batch
pass and :func:`verifier.assess.finish.finish` take them from the :class:`RunFacts`.
What is derived from the run folder as a whole, and is the same for every document of
the run, is computed on first use and kept: the columns' exposure, the connection
report, the pipelines' and copiers' outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from verifier.judge.checks.load import RunFiles, config_of, load_drain, observation_combos
from verifier.judge.model import CheckOutcome, Drain, RunConfig, RunData
from verifier.rundata.formats import RunFormatError
from verifier.rundata.layout import RunLayout
from verifier.rundata.nemesis import read_nemesis
from verifier.rundata.plan import RunPlan, plan_of, read_plan
from verifier.rundata.startfail import describe, read_start_failures


def interrupted(run_dir: Path | str) -> str | None:
    """Why and when a signal stopped the run (RUN/INTERRUPTED, written by `verifier chaos`),
    or None for a run that was not interrupted."""
    try:
        text = RunLayout(Path(run_dir)).interrupted.read_text(errors="replace").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"(the mark is unreadable: {exc.strerror})"
    return text or "interrupted"


@dataclass
class RunFacts:
    """One run folder as the verdict sees it. ``config`` is None for a run that could not
    complete (its document says so, every column UNKNOWN): only its plan, if it was
    written, and its connection log are read then."""

    run_dir: Path
    config: RunConfig | None  # the plan as the judge reads it (checks.load.config_of)
    #: config.json: the scenario's spec, each producer's client, the broker's version
    plan: RunPlan | None
    drain: Drain | None = None
    nemesis: list[dict] = field(default_factory=list)
    #: pid -> why its generator exited before producing (RUN/generators-failed.json)
    start_failures: dict[str, str] = field(default_factory=dict)
    interrupted: str | None = None
    #: the producers' histories (Arrow) the batch pass read, kept for the exposure only
    history: object | None = None
    _exposure: dict[str, dict] | None = None
    _connections: dict | None = None
    _pipelines: dict[int, tuple[list[CheckOutcome], dict]] = field(default_factory=dict)

    @property
    def layout(self) -> RunLayout:
        return RunLayout(self.run_dir)

    @property
    def kafka_version(self) -> str | None:
        """The broker release the run ran on (``external`` for a user's cluster); None for
        a run recorded before versions were."""
        return self.plan.kafka_version if self.plan is not None else None

    @property
    def clients(self) -> list[str]:
        """The generator clients of the run and their versions (``java 4.1.1``); a run
        recorded before clients were named ran kafka-python."""
        return self.plan.clients() if self.plan is not None else []

    @property
    def scenario_faults(self) -> list[dict]:
        """The fault specs of the run's scenario (its plan's ``scenario_spec``)."""
        spec = self.plan.scenario_spec if self.plan is not None else {}
        return list(spec.get("faults") or [])

    def run_data(self, **more) -> RunData:
        """The run as the verdict's builder reads it, without Spark frames (``more``:
        the pass's own fields, e.g. ``started``)."""
        return RunData(config=self.config, events=None, observations=None,
                       combos=more.pop("combos", []), drain=self.drain,
                       drain_partitions=None, nemesis=self.nemesis,
                       start_failures=self.start_failures, **more)  # fmt: skip

    def run_files(self) -> RunFiles:
        """Everything the batch pass reads without Spark: these facts, the histories and
        the observation folders (validated: a bad file fails here, before Spark starts)."""
        from verifier.rundata.history import read_histories

        where = self.layout
        history, started = read_histories(where.histories, self.config.run,
                                          self.config.producers)
        if self._exposure is None:  # else it is computed already: no need to keep them
            self.history = history
        return RunFiles(config=self.config, history=history, started=started,
                        combos=observation_combos(where.observations), drain=self.drain,
                        nemesis=self.nemesis, start_failures=self.start_failures)

    def pipelines(self, cap: int) -> tuple[list[CheckOutcome], dict]:
        """The pipelines' and copiers' outcomes and counts: judged once from their own
        files, the same for the live and the batch pass."""
        if cap not in self._pipelines:
            from verifier.judge.copier import judge_run as judge_copiers
            from verifier.judge.pipeline import judge_run as judge_pipelines

            piped, counts = judge_pipelines(self.run_dir, self.config, self.drain, cap)
            piped += judge_copiers(self.run_dir, self.config, cap)
            from verifier.judge.application import judge_run as judge_apps

            apps, app_counts = judge_apps(self.run_dir, self.config, cap)
            piped, counts = piped + apps, {**counts, **app_counts}
            self._pipelines[cap] = (piped, counts)
        piped, counts = self._pipelines[cap]
        return list(piped), dict(counts)

    def exposure(self, doc: dict) -> dict[str, dict]:
        """Each column's exposure (DESIGN §10), computed once: what each fault concerning
        it acted on. Depends on the columns' names and sources, never on their verdicts."""
        if self._exposure is None:
            self._exposure = {}
            if self.config is not None:
                from verifier.judge.exposure_facts import add_exposure

                scratch = {**doc, "columns": [dict(c) for c in doc["columns"]]}
                add_exposure(scratch, self.run_dir, self.run_data(), self.history)
                self._exposure = {c["name"]: c["exposure"] for c in scratch["columns"]
                                  if "exposure" in c}
            self.history = None  # read for the exposure alone
        return self._exposure

    def connections(self, faults: list[dict]) -> dict:
        """The run's connection report (``verdict.json`` ``connections``) from the proxy's
        log, judged with the scenario's ``[connections]`` thresholds; computed once."""
        if self._connections is None:
            self._connections = _connection_section(self.layout, faults, self.plan)
        return self._connections


def _connection_section(where: RunLayout, faults: list[dict], plan: RunPlan | None) -> dict:
    from verifier.judge.connections import summarize, unavailable
    from verifier.rundata.connections import read_connections

    if not where.connections.exists():
        return unavailable("no connection log (no fault proxy: an external cluster)")
    try:
        log = read_connections(where.connections)
    except RunFormatError as exc:
        return unavailable(str(exc))
    spec = plan.scenario_spec if plan is not None else {}
    try:
        return summarize(log, faults, spec.get("connections"))
    except ValueError as exc:
        return unavailable(f"bad [connections] thresholds: {exc}")


def read_facts(run_dir: Path | str, config: RunConfig | None = None) -> RunFacts:
    """Read and validate the run folder's small files (``config``: the plan as the run's
    follower already read it); :class:`RunFormatError` names a bad one."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunFormatError(run_dir, "not a run folder (no such directory)")
    where = RunLayout(run_dir)
    plan = read_plan(where.config)
    config = config or config_of(plan, where.config)
    return RunFacts(
        run_dir=run_dir, config=config, plan=plan, drain=load_drain(where.drain),
        nemesis=read_nemesis(where.nemesis, config.run),
        start_failures={pid: describe(e) for pid, e
                        in read_start_failures(where.start_failures).items()},
        interrupted=interrupted(run_dir),
    )  # fmt: skip


def crashed_facts(run_dir: Path | str, interrupted: str | None = None) -> RunFacts:
    """The facts of a run that could not complete: its plan if it was written (the
    connection checks' thresholds, the faults the advice compares under); ``interrupted``:
    the signal that stopped it."""
    return RunFacts(run_dir=Path(run_dir), config=None, plan=plan_of(run_dir),
                    interrupted=interrupted)
