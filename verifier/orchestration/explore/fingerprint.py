"""A finding's fingerprint and the known bugs it may be, pure (docs/explore.md).

A fault of a scenario is classified back into its cell of the space (request type,
perturbation, release event) from its params alone, so a shrunk scenario, or a known
bug's own hand-written schedule, has a cell as a generated one does. A finding's
fingerprint is (column kind, forbidden anomaly kind, the cells of its faults); the
known-bugs profile's bugs (``_known_bugs.toml``) are recognized by the cell of their
schedule's hold and the column kind where their consequence shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifier.orchestration.explore.space import API_NAMES, REQUESTS, Perturbation
from verifier.orchestration.explore.trials import SYNC_GROUP

_ERROR_API = {name: req for req, (_, name) in REQUESTS.items() if name}


def classify(fault: dict) -> Perturbation | None:
    """The cell a scenario's fault makes happen, or None (a fault that is no perturbation
    of one transactional request, or a hold released by its time bound alone)."""
    params = fault.get("params") or {}
    kind = fault.get("kind")
    if kind == "ack-loss":
        request = API_NAMES.get(int((params.get("api_keys") or [0])[0]))
        return Perturbation(request, "dropped", "own-answer") if request else None
    if kind == "error-answer":
        api = params.get("api", "produce")
        request = _ERROR_API.get(api if isinstance(api, str) else api[0])
        variant = "replaced" if params.get("variant") == "replace" else "refused"
        return Perturbation(request, variant, "own-answer") if request else None
    if kind != "hold":
        return None
    api = int((params.get("api_keys") or [0])[0])
    request = API_NAMES.get(api)
    release = params.get("release_on") or {}
    if request is None or "api_key" not in release:
        return None
    what = "copy" if params.get("client_view") == "copy" else "held"
    on = int(release["api_key"])
    if params.get("after_marker"):
        event = "abort-marker"
    elif on == api and "after" not in release:
        event = "own-answer"
    elif on == 26:
        event = "next-end-txn"
    elif on in (0, 24, 25, 28):
        event = "next-write"
    elif on == SYNC_GROUP:
        event = "rebalance"
    else:
        return None
    return Perturbation(request, what, event)


def cells_of(faults) -> tuple[Perturbation, ...]:
    """The cells of a scenario's faults, in its order (unclassified faults left out)."""
    return tuple(c for c in (classify(f) for f in faults or ()) if c is not None)


@dataclass(frozen=True)
class Fingerprint:
    """How a run FAILed, in the space's terms: the column kind (its mode: transactional,
    copier, ...), the forbidden anomaly kind, and the cells of its faults."""

    column_kind: str
    anomaly: str
    cells: tuple[Perturbation, ...]

    @property
    def name(self) -> str:
        """``transactional-duplicate-produce-held-abort-marker``: its scenario file's name."""
        cells = "+".join(c.key for c in self.cells) or "no-perturbation"
        return f"{self.column_kind}-{self.anomaly}-{cells}"

    @property
    def own(self) -> bool:
        """Whether the client itself produces every perturbation (else only a replay does)."""
        return all(c.own for c in self.cells)

    def __str__(self) -> str:
        cells = " + ".join(str(c) for c in self.cells) or "no perturbation"
        return f"{self.column_kind} {self.anomaly}: {cells}"


def fail_fingerprints(doc: dict, faults) -> list[tuple[str, Fingerprint]]:
    """Each (FAILed column name, fingerprint) of a run's verdict document, the scenario's
    ``faults`` giving the cells; in the document's order of columns and kinds."""
    cells = cells_of(faults)
    return [(c["name"], Fingerprint(str(c.get("mode") or c["name"]), k, cells))
            for c in doc.get("columns", ()) if c.get("verdict") == "FAIL"
            for k in c.get("forbidden") or ()]


@dataclass(frozen=True)
class BugSignature:
    """A known bug as the space sees it: the cell its schedule forces and the column kinds
    its consequence shows in; with its documented combinations (kafka, client, status)."""

    bug: str
    cell: Perturbation
    column_kinds: frozenset[str]
    combinations: tuple[tuple[str, str, str], ...]


def signatures(bugs, load) -> list[BugSignature]:
    """The known bugs' signatures: ``bugs`` as ``known_bugs.load_known_bugs`` gives them,
    ``load(name)`` a scenario by name. Each schedule a bug names (its own and its
    combinations' own) gives a signature of its first classified fault."""
    out = []
    for bug in bugs:
        kinds = frozenset(c.split("@")[0] for c in bug.columns)
        for name in dict.fromkeys([bug.scenario] + [c.scenario for c in bug.combinations
                                                    if c.scenario]):
            combos = tuple((c.kafka, c.client, c.status) for c in bug.combinations
                           if (c.scenario or bug.scenario) == name and not c.broker
                           and not c.features)
            cells = cells_of(load(name).faults)
            if cells:
                out.append(BugSignature(bug.id, cells[0], kinds, combos))
    return out


def recognize(fp: Fingerprint, sigs: list[BugSignature], kafka: str, client: str,
              same=None) -> list[dict]:
    """The known bugs whose signature the fingerprint carries (its column kind and one of
    its cells), each with what the known-bugs table documents for this broker version and
    client at the defaults: ``affected``, ``fixed``, ``fenced`` or None (not documented).
    ``same(a, b)``: whether two client specs are one client (default: equal text;
    ``producers.clients.same_client`` knows the pinned versions)."""
    same = same or (lambda a, b: a == b)
    found: dict[str, dict] = {}
    for s in sigs:
        if fp.column_kind not in s.column_kinds or s.cell not in fp.cells:
            continue
        status = next((st for k, c, st in s.combinations if k == kafka and same(c, client)),
                      None)
        entry = found.setdefault(s.bug, {"bug": s.bug, "status": None})
        entry["status"] = entry["status"] or status
    return list(found.values())


def known_text(known: list[dict]) -> str:
    """One line: the known bugs a finding is, and whether that is documented here."""
    if not known:
        return "not a known bug of the known-bugs profile: a new finding"
    said = {"affected": "documented affected here", "fixed": "documented FIXED here: a "
            "contradiction", "fenced": "documented fenced here: a contradiction",
            None: "its fingerprint, not documented for this broker and client"}
    return "; ".join(f"{k['bug']} ({said[k['status']]})" for k in known)
