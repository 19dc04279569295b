"""Fault windows: one per scheduled fault, read from the nemesis history (pure).

The one reading of a fault's start and heal that the verdict's ``faults`` list, the
exposure and the start outcomes all use. A start that failed (``fail``: not applied)
keeps the time it was tried (:attr:`Window.tried`, the verdict document lists it with
``start_outcome: "fail"``) but has no :attr:`Window.start`: nothing was exposed to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the completion lines of a fault action (docs/formats.md §3)
COMPLETIONS = ("ok", "fail", "info")


@dataclass
class Window:
    """One scheduled fault: its start's and heal's completions."""

    id: int
    fault: str
    target: dict
    #: when its start completed, whatever the outcome; None: never completed
    tried: int | None = None
    end: int | None = None
    #: the start's outcome: "ok", "fail" or "info" ("" before it completed)
    outcome: str = ""
    error: str | None = None
    start_detail: dict = field(default_factory=dict)
    heal_detail: dict = field(default_factory=dict)
    heal_outcome: str | None = None
    #: a start or heal completed (a window of hold events alone has none)
    completed: bool = False

    @property
    def start(self) -> int | None:
        """When the fault was applied; None when its start failed or never completed."""
        return None if self.outcome == "fail" else self.tried

    def to_json(self) -> dict:
        """The verdict document's entry (``faults``)."""
        out = {"id": self.id, "fault": self.fault, "target": self.target,
               "start": self.tried, "end": self.end}
        if self.outcome:
            out["start_outcome"] = self.outcome
        if self.heal_outcome is not None:
            out["heal_outcome"] = self.heal_outcome
        return out


def read_windows(nemesis: list[dict]) -> list[Window]:
    """Every fault id of the history (the final heal-all, id 0, included), in the order
    they first appear."""
    wins: dict[int, Window] = {}
    for op in nemesis:
        if op.get("type") == "invoke" or "id" not in op:
            continue
        w = wins.get(op["id"])
        if w is None:
            w = wins[op["id"]] = Window(op["id"], op.get("fault"), op.get("target"))
        if op.get("type") not in COMPLETIONS:
            continue  # a hold event: it names the fault, nothing more
        if op.get("f") == "start":
            w.tried, w.outcome, w.error = op.get("t"), op["type"], op.get("error")
            w.start_detail = op.get("detail") or {}
            w.completed = True
        elif op.get("f") == "heal":
            w.end, w.heal_outcome = op.get("t"), op["type"]
            w.heal_detail = op.get("detail") or {}
            w.completed = True
    return list(wins.values())


def windows(nemesis: list[dict]) -> list[Window]:
    """One window per scheduled fault with a completion, by id (the heal-all is none)."""
    return sorted((w for w in read_windows(nemesis) if w.id and w.completed),
                  key=lambda w: w.id)


def fault_windows(nemesis: list[dict]) -> list[dict]:
    """The verdict document's ``faults``: one window per fault whose start completed,
    from its start to its heal (None if never healed)."""
    return [w.to_json() for w in read_windows(nemesis) if w.tried is not None]


def fault_kinds(nemesis: list[dict]) -> set[str]:
    """The kinds of the faults that started (``ok``): the expectation table's conditions."""
    return {op.get("fault") for op in nemesis if op.get("f") == "start" and op.get("type") == "ok"}
