"""The space `verifier explore` searches, pure: every perturbation of one transactional
request that the proxy's existing fault params can express, in budget order
(docs/explore.md); :mod:`verifier.orchestration.explore.trials` makes each a scenario.

A perturbation is a request type x what happens to it x the event that releases it:

- ``held``: the client's own request is kept (it times out, retries: its retries are kept
  too) and sent to the broker when the event passes (a ``hold``, ``client_view`` timeout);
- ``copy``: the request goes on, a copy is kept and sent when the event passes (a retry
  whose original was delayed; a ``hold`` with ``client_view`` copy);
- ``dropped``: the broker's answer never reaches the client (``ack-loss``), released by
  nothing: its own answer is the event;
- ``refused`` / ``replaced``: answered with a retriable error instead of being forwarded,
  or after the broker did the work (``error-answer``); its own answer is the event.

Events: ``own-answer`` (the original's answer: a copy released at once), ``next-end-txn``
(the EndTxn answer of the same transactional id), ``next-write`` (the next transaction's
first write: its AddPartitionsToTxn answered, or its Produce where the client speaks
transaction version 2 and sends none; a copied end of a transaction, EndTxn or
WriteTxnMarkers, is a commit's and waits for the first Produce of a next transaction meant
to abort: the opposite outcome, where ending it early shows), ``abort-marker`` (the
transaction's abort marker in the partition's log; Produce and TxnOffsetCommit only, the
only ones ``after_marker`` takes). Every released request gates the client's next
transactional requests until the broker answered it (``then_hold``), so it lands before
the client's next step.

The copier workload (TxnOffsetCommit, AddOffsetsToTxn) restarts its copier after the
perturbation, as a deployment restarts one: a copier reads its group's committed offsets
only when it starts, so offsets committed wrongly show only then.

``rebalance``: a copy of a transactional request of a consumer application's instance
(the transactional copier preset of the client, two instances) released once its group
has rebalanced (the next SyncGroup answer) after a third instance joined: the partitions
the copied request was about belong to another instance by then (KIP-447's fencing by the
group's generation is what refuses it). The app workload.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from verifier.rundata.errors import UsageError

#: request type -> (api key, the error-answer fault's api name or None)
REQUESTS: dict[str, tuple[int, str | None]] = {
    "Produce": (0, "produce"),
    "EndTxn": (26, "end-txn"),
    "AddPartitionsToTxn": (24, "add-partitions-to-txn"),
    "TxnOffsetCommit": (28, "txn-offset-commit"),
    "AddOffsetsToTxn": (25, "add-offsets-to-txn"),
    "InitProducerId": (22, "init-producer-id"),
    "WriteTxnMarkers": (27, None),  # the coordinator's, on the replication listener
}
API_NAMES = {key: name for name, (key, _) in REQUESTS.items()}
PERTURBATIONS = ("held", "copy", "refused", "replaced", "dropped")
EVENTS = ("abort-marker", "next-write", "next-end-txn", "own-answer", "rebalance")
#: the copier's requests run on the copier workload (an idempotent input, a copier)
COPIER_REQUESTS = frozenset({"TxnOffsetCommit", "AddOffsetsToTxn"})
#: a consumer application's transactional requests a copy of is released after its
#: group's rebalance (the ``rebalance`` event: the app workload)
APP_REQUESTS = frozenset({"Produce", "EndTxn", "TxnOffsetCommit", "AddOffsetsToTxn"})
@dataclass(frozen=True, order=True)
class Perturbation:
    """One cell of the space: a request type, what happens to it, its release event."""

    request: str
    kind: str
    event: str

    @property
    def key(self) -> str:
        """``produce-held-abort-marker``: its name in files and in the ledger."""
        return f"{self.request.lower()}-{self.kind}-{self.event}"

    @property
    def own(self) -> bool:
        """Whether the client itself sends what the perturbation delivers (its own request
        held, answered with an error, its answer lost, so it retries) or only a replay
        does (a copy the client never sent twice)."""
        return self.kind != "copy"

    def __str__(self) -> str:
        what = {"held": "held", "copy": "a copy", "refused": "refused with an error",
                "replaced": "its answer replaced by an error",
                "dropped": "its answer dropped"}[self.kind]
        when = {"own-answer": "", "next-end-txn": " until the next EndTxn answer",
                "next-write": " until the next transaction's first write",
                "abort-marker": " until the abort marker is in the log",
                "rebalance": " until the application's group rebalanced"}[self.event]
        return f"{self.request} {what}{when}"


def expressible(p: Perturbation) -> bool:
    """Whether the existing fault params express ``p`` (and it can happen at all)."""
    api, error_api = REQUESTS[p.request]
    if p.event == "rebalance":  # a copy of an application's request (the app workload)
        return p.kind == "copy" and p.request in APP_REQUESTS
    if p.kind in ("refused", "replaced", "dropped"):
        # released by nothing but their own answer; the error-answer fault answers no
        # WriteTxnMarkers, and a dropped answer on the replication listener is left out
        return p.event == "own-answer" and error_api is not None
    if p.event == "own-answer":  # a held request's own answer never comes
        return p.kind == "copy"
    if p.event == "abort-marker":  # after_marker: held Produce and TxnOffsetCommit only
        return p.request in ("Produce", "TxnOffsetCommit")
    return True


def space(client: str = "kafka-python") -> list[Perturbation]:
    """Every expressible single perturbation for ``client``, in budget order
    (:func:`ordered`). The copier, whose requests are TxnOffsetCommit and AddOffsetsToTxn,
    is kafka-python's only: another client's space leaves them out (its application's
    are in: the Java transactional copier sends them)."""
    cells = [Perturbation(r, k, e) for r in REQUESTS for k in PERTURBATIONS for e in EVENTS]
    copier = client.partition(":")[0] == "kafka-python"
    return ordered([c for c in cells if expressible(c)
                    and (copier or workload_of(c) != "copier")])


def ordered(cells: list[Perturbation]) -> list[Perturbation]:
    """Cheapest and most likely first: request types in the order a transaction sends
    them most (Produce, then the EndTxn that ends it, ...; the copier's and the
    coordinator's last: more processes, a rolling restart for the replication listener);
    the client's own request held before a copy, before error answers and drops (what a
    slow network does most); events that reach into a later transaction first. The app
    workload's after all the others: application instances, and one joining."""
    rank = {name: i for i, name in enumerate(REQUESTS)}
    return sorted(cells, key=lambda c: (workload_of(c) == "app", rank[c.request],
                                        PERTURBATIONS.index(c.kind), EVENTS.index(c.event)))


def parse_requests(text: str) -> tuple[str, ...]:
    """``--requests``: a comma list of the space's request types, case-insensitive, in
    the space's order (``writetxnmarkers,endtxn`` -> ``("EndTxn", "WriteTxnMarkers")``);
    an unknown or missing name is a :class:`UsageError` naming the valid ones."""
    by_lower = {name.lower(): name for name in REQUESTS}
    asked = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [a for a in asked if a not in by_lower]
    if unknown or not asked:
        what = f"unknown request type {', '.join(unknown)}" if unknown else "no request type"
        raise UsageError(f"--requests {text!r}: {what}; the space's request types are "
                         f"{', '.join(REQUESTS)} (case-insensitive, comma-separated)")
    return tuple(name for name in REQUESTS if name.lower() in asked)


def plan(client: str = "kafka-python", budget_pairs: int = 12,
         requests: tuple[str, ...] | None = None) -> list[tuple[Perturbation, ...]]:
    """What to try, in order: every single perturbation, then pairs of the first singles
    of one workload (``budget_pairs`` of them at most; two perturbations of one request
    type are not a pair: the first rule would take the request). With ``requests`` (the
    focus, :func:`parse_requests`) only the trials whose every perturbation is of one of
    those request types."""
    singles = [c for c in space(client) if requests is None or c.request in requests]
    pairs = [(a, b) for a, b in combinations(singles, 2)
             if a.request != b.request and workload_of(a) == workload_of(b) != "app"
             and "WriteTxnMarkers" not in (a.request, b.request)]
    return [(s,) for s in singles] + pairs[:budget_pairs]


def key_of(trial: tuple[Perturbation, ...]) -> str:
    return "+".join(p.key for p in trial)


def workload_of(p: Perturbation) -> str:
    if p.event == "rebalance":
        return "app"
    return "copier" if p.request in COPIER_REQUESTS else "transactional"
