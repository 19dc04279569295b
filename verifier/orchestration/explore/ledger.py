"""What an explore output folder keeps between calls (``DIR/explore.json``, format
``explore`` 1), and the coverage table written from it (docs/explore.md).

A trial is one run of one planned perturbation (or pair): its column verdicts, whether
it was exposed (the perturbation acted on its column inside the window: PASS or FAIL
with the fault's exposure counted, never NOT EXERCISED), its fingerprints. A finding is
one fingerprint: the runs that showed it (duplicates merged), its shrink, its scenario
file and the known bugs it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from verifier.orchestration.explore.space import EVENTS, PERTURBATIONS, REQUESTS
from verifier.rundata.errors import UsageError
from verifier.rundata.formats import RunFormatError, read_json, write_json

LEDGER = "explore.json"
#: the settings a folder was explored with: a second call must name the same
#: (``requests``: the focus, ``--requests``, None for the whole space)
SAME = ("kafka_version", "client", "settings", "requests")


@dataclass
class Ledger:
    where: Path
    kafka_version: str
    client: str
    settings: list[str] = field(default_factory=list)
    trials: dict[str, dict] = field(default_factory=dict)
    findings: dict[str, dict] = field(default_factory=dict)
    sessions: list[dict] = field(default_factory=list)
    requests: list[str] | None = None

    @classmethod
    def open(cls, where: Path, kafka_version: str, client: str,
             settings: list[str], requests: list[str] | None = None) -> Ledger:
        """The folder's ledger, or a new one; a folder explored with other settings (or
        another ``--requests``) is a :class:`UsageError` (a resumed exploration must be
        the same one)."""
        path = where / LEDGER
        asked = {"kafka_version": kafka_version, "client": client, "settings": list(settings),
                 "requests": None if requests is None else list(requests)}
        if not path.exists():
            return cls(where, kafka_version, client, list(settings), requests=asked["requests"])
        try:
            doc = read_json(path, "explore")
        except RunFormatError as exc:
            raise UsageError(f"{path}: cannot resume from it: {exc.problem}") from None
        differ = [f"{k} {_shown(k, doc.get(k))} (now {_shown(k, asked[k])})" for k in SAME
                  if doc.get(k) != asked[k]]
        if differ:
            raise UsageError(f"{where} was explored with {', '.join(differ)}: resume it with "
                             "the same flags, or give another --out")
        return cls(where, kafka_version, client, list(settings), doc.get("trials") or {},
                   doc.get("findings") or {}, doc.get("sessions") or [], asked["requests"])

    def save(self) -> None:
        write_json(self.where / LEDGER, "explore", {
            "kafka_version": self.kafka_version, "client": self.client,
            "settings": self.settings, "requests": self.requests, "trials": self.trials,
            "findings": self.findings, "sessions": self.sessions}, indent=True)

    def tried(self, key: str) -> bool:
        """A trial that ran to its verdict (an interrupted one is tried again)."""
        return key in self.trials and not self.trials[key].get("interrupted")

    def run_seconds(self, default: float = 75.0) -> float:
        """The mean wall time of a trial's run so far (the budget's estimate)."""
        times = [t["seconds"] for t in self.trials.values() if t.get("seconds")]
        return sum(times) / len(times) if times else default


def _shown(key: str, value) -> str:
    if key == "requests":
        return "--requests " + ",".join(value) if value else "every request type"
    return repr(value)


def trial_record(cells: list[str], doc: dict, seconds: float) -> dict:
    """A trial's entry from its run's verdict document."""
    cols = {c["name"]: c.get("verdict", "UNKNOWN") for c in doc.get("columns") or ()}
    verdicts = set(cols.values())
    outcome = next((v for v in ("FAIL", "UNKNOWN", "NOT EXERCISED", "SKIPPED", "PASS")
                    if v in verdicts), "UNKNOWN")
    return {"cells": cells, "run_dir": doc.get("run_dir"), "columns": cols,
            "outcome": outcome, "exposed": exposed(doc), "seconds": round(seconds, 1),
            "interrupted": bool(doc.get("interrupted"))}


def exposed(doc: dict) -> bool:
    """Did the perturbation act on a column inside its window? A PASS or a FAIL counts
    only with the perturbation's own exposure measured above zero on that column: a FAIL
    beside a hold that never released into its event is not this perturbation's, and a
    column a trial's other fault exercised (the app workload's scale-out, the copier's
    restart) PASSes whether the perturbation acted or not (an app trial whose hold matched
    nothing was counted exposed, 2026-11-30)."""
    return any(col.get("verdict") in ("PASS", "FAIL") and _exposure_total(col) > 0
               for col in doc.get("columns") or ())


#: the fault kinds a perturbation is made of (verifier.orchestration.explore.trials)
PERTURBING = ("hold", "ack-loss", "error-answer")


def _exposure_total(col: dict) -> float:
    """What the perturbations acted on in the column, from its verdict's exposure: a
    hold's requests released into their event and answered, answers dropped or forged."""
    total = 0.0
    for entry in (col.get("exposure") or {}).get("faults") or ():
        value = entry.get("acted") if isinstance(entry, dict) else None
        if entry.get("fault") in PERTURBING and isinstance(value, int | float):
            total += value
    return total


# ----- the coverage table ----------------------------------------------------------------


def coverage(ledger: Ledger, planned: list[str]) -> list[dict]:
    """One row per cell of the space (request type, perturbation, release event) that a
    trial of ``planned`` touches: how many trials tried it, exposed it, were clean (every
    column PASS) or found a FAIL; ``untried`` the planned trials not run yet."""
    rows: dict[str, dict] = {}
    for key in planned:
        for cell in key.split("+"):
            rows.setdefault(cell, {"cell": cell, "tried": 0, "exposed": 0, "clean": 0,
                                   "fail": 0, "other": 0, "untried": 0})
        trial = ledger.trials.get(key)
        for cell in key.split("+"):
            row = rows[cell]
            if trial is None or trial.get("interrupted"):
                row["untried"] += 1
                continue
            row["tried"] += 1
            row["exposed"] += bool(trial.get("exposed"))
            out = trial.get("outcome")
            row["clean" if out == "PASS" else "fail" if out == "FAIL" else "other"] += 1
    order = {r: i for i, r in enumerate(REQUESTS)}
    return sorted(rows.values(), key=lambda r: _sort_key(r["cell"], order))


def _sort_key(cell: str, order: dict) -> tuple:
    for request, i in order.items():
        prefix = request.lower() + "-"
        if cell.startswith(prefix):
            kind, _, event = cell[len(prefix):].partition("-")
            return (i, PERTURBATIONS.index(kind) if kind in PERTURBATIONS else 9,
                    EVENTS.index(event) if event in EVENTS else 9)
    return (99, 0, 0)


def coverage_markdown(rows: list[dict]) -> list[str]:
    lines = ["| request-perturbation-event | tried | exposed | clean | FAIL | not exposed or "
             "unknown | untried |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['cell']} | {r['tried']} | {r['exposed']} | {r['clean']} | {r['fail']} | "
              f"{r['other']} | {r['untried']} |" for r in rows]
    return lines


def coverage_text(rows: list[dict]) -> list[str]:
    width = max([len(r["cell"]) for r in rows] + [26])
    lines = [f"{'request-perturbation-event':<{width}}  tried  exposed  clean  FAIL  "
             "other  untried"]
    lines += [f"{r['cell']:<{width}}  {r['tried']:>5}  {r['exposed']:>7}  {r['clean']:>5}  "
              f"{r['fail']:>4}  {r['other']:>5}  {r['untried']:>7}" for r in rows]
    return lines
