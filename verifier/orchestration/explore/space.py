"""The space `verifier explore` searches, pure: every perturbation of one transactional
request that the proxy's existing fault params can express, in budget order, each as a
scenario `verifier chaos` runs (docs/explore.md).

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
perturbation, as a deployment restarts one (:func:`copier_restart`): a copier reads its
group's committed offsets only when it starts, so offsets committed wrongly show only then.

``rebalance``: a copy of a transactional request of a consumer application's instance
(the transactional copier preset of the client, two instances) released once its group
has rebalanced (the next SyncGroup answer) after a third instance joined: the partitions
the copied request was about belong to another instance by then (KIP-447's fencing by the
group's generation is what refuses it). The app workload (:func:`app_of`).
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
#: the app workload's application per client (verifier.rundata.apps' presets: the
#: transactional copier, which commits its input's offsets in its transactions), its
#: instances, and the instance whose request is copied
APP_PRESETS = {"kafka-python": "copier-transactional", "java": "java-copier-transactional"}
APP_INSTANCES = 2
APP_COPIED = 0
#: SyncGroup: its answer hands a member its part of the group's new assignment
SYNC_GROUP = 14
#: the app workload's copy starts once the group has settled (its instances joined), a
#: third instance joins 2 s later for APP_JOIN_S (its join and its leave: two rebalances)
APP_HOLD_START_S = 10
APP_JOIN_S = 12
#: a retriable error each request type is refused with (the client retries it) and one
#: a broker that did the work may answer (replace: retriable only)
REFUSE_ERROR = {"Produce": "NOT_LEADER_OR_FOLLOWER"}
REPLACE_ERROR = {"Produce": "REQUEST_TIMED_OUT"}
TXN_ERROR = "COORDINATOR_LOAD_IN_PROGRESS"
#: the transactional APIs a released request gates until its answer (then_hold)
GATED = [0, 22, 24, 25, 26, 28]
HOLD_START_S = 3
LOAD_S = 24
#: the copier's restart, part of every copier trial: killed inside a transaction and
#: started again this much later, as a deployment restarts one (it then resumes from its
#: group's committed offsets, not from its own positions: docs/explore.md)
COPIER_DOWN_S = 2
#: without a copy in the trial, the kill comes this long after the last perturbation's
#: window (its heal), waiting at most COPIER_KILL_WITHIN_S for an open transaction
COPIER_KILL_AFTER_S = 2
COPIER_KILL_WITHIN_S = 5
#: a copier transaction in ten aborts: aborts happen in every run, and the transaction
#: after one nearly always commits, so what an abort left pending reaches a commit
COPIER_ABORT_FRACTION = 0.1
#: a hold's bound: before the fault's heal (start + 20 s), which would release it too
RELEASE_BOUND_MS = 15000
#: copies of a commit marker taken for its next transaction: only that one (the producer's
#: next epoch) releases a copy, and it aborts as often as the workload's abort fraction
#: (0.5): one copy went unreleased on 4.1.1 (2026-11-30, the next transaction committed:
#: NOT EXERCISED), four miss 1 time in 16
MARKER_COPIES = 4
#: the requests that end a transaction: a copy of one into the next transaction is a
#: copy of a commit (``committed``) released into a transaction meant to abort
ENDS = frozenset({"EndTxn", "WriteTxnMarkers"})


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


# ----- a perturbation as a scenario ----------------------------------------------------


def workload_of(p: Perturbation) -> str:
    if p.event == "rebalance":
        return "app"
    return "copier" if p.request in COPIER_REQUESTS else "transactional"


def app_of(client: str) -> tuple[str, str]:
    """The app workload's application for ``client``: (preset, the Kafka release a Java
    preset is built against, "" for the default)."""
    name, _, version = client.partition(":")
    return APP_PRESETS[name if name in APP_PRESETS else "java"], version


def app_transactional_id(client: str) -> str:
    """The copied instance's transactional id as a scenario names it (resolved by
    verifier.orchestration.planning: ``@app:<name>/<instance>``)."""
    return f"@app:{app_of(client)[0]}/{APP_COPIED}"


def speaks_tv2(kafka_version: str, client: str) -> bool:
    """Does the client speak transaction version 2 with this broker (no AddPartitionsToTxn:
    a partition joins a transaction with its first write)? The Java client 4.x on a 4.x
    broker; kafka-python, librdkafka and the Java client before 4.0 do not."""
    name, _, version = client.partition(":")
    java4 = name == "java" and (not version or not version.startswith(("2.", "3.")))
    return java4 and not kafka_version.startswith(("2.", "3."))


def _commit_copy(p: Perturbation) -> bool:
    """A copied end of a transaction released into the next one: a commit's copy, released
    by a transaction meant to abort."""
    return p.kind == "copy" and p.event == "next-write" and p.request in ENDS


def _release(p: Perturbation, tv2: bool) -> dict:
    api = REQUESTS[p.request][0]
    same = {"direction": "response", "transactional_id": "same"}
    if p.event == "rebalance":  # any member's share of the next assignment
        return {"release_on": {"api_key": SYNC_GROUP, "direction": "response"}}
    if p.event == "own-answer":
        return {"release_on": {"api_key": api, **same}}
    if p.event in ("next-end-txn", "abort-marker"):
        out: dict = {"release_on": {"api_key": 26, **same}}
        if p.request == "EndTxn":  # the next one: not its own (or its original's) answer
            out["release_on"]["after"] = {"api_key": 26, "direction": "response"}
        if p.event == "abort-marker":
            out["after_marker"] = "abort"
        return out
    if _commit_copy(p):
        # a copied commit released into a next transaction of the opposite outcome: its
        # first Produce answered without error, its records meant to abort (one meant to
        # commit, ended early, shows nothing at read_committed)
        first = {"api_key": 0, **same, "ok": True, "records": "abort"}
        if p.request == "WriteTxnMarkers":  # that partition, that producer's next epoch
            first.update(partition="same", producer="same")
        return {"release_on": first}
    first = {"api_key": 0 if tv2 else 24, **same, "ok": True,
             "after": {"api_key": 26, "direction": "response"}}
    if p.request in ("Produce", "WriteTxnMarkers"):
        first["partition"] = "same"
    return {"release_on": first}


def fault_of(p: Perturbation, tv2: bool, start: float = HOLD_START_S,
             client: str = "kafka-python") -> dict:
    """The fault that makes ``p`` happen, in the scenario schema of `verifier chaos`."""
    api, error_api = REQUESTS[p.request]
    txn = {"copier": "@copier", "app": app_transactional_id(client)}.get(
        workload_of(p), "@transactional")
    fault: dict = {"kind": "hold", "target": {"all": True}, "start": start, "duration": 20}
    if p.kind in ("held", "copy"):
        params: dict = {"api_keys": [api], "transactional_id": txn,
                        "limit": (3 if p.kind == "held" else MARKER_COPIES
                                  if _commit_copy(p) and p.request == "WriteTxnMarkers"
                                  else 1),
                        "client_view": "timeout" if p.kind == "held" else "copy"}
        if p.request in ("Produce", "WriteTxnMarkers") and workload_of(p) != "app":
            params["partition"] = 0
        if p.kind == "copy" and p.event == "abort-marker":
            params["records"] = "abort"  # a copy of a transaction that aborts
        if _commit_copy(p):
            params["committed"] = True  # into a next transaction meant to abort
        params.update(_release(p, tv2))
        params.update(release_after_ms=RELEASE_BOUND_MS,
                      then_hold={"api_keys": list(GATED), "max_ms": 10000}, trigger="held")
    elif p.kind == "dropped":
        fault.update(kind="ack-loss", duration=14)
        params = {"api_keys": [api], "next": 2, "action": "drop"}
        if p.request == "Produce":
            params["trigger"] = "appended"
    else:
        fault.update(kind="error-answer", duration=14)
        errors = REFUSE_ERROR if p.kind == "refused" else REPLACE_ERROR
        params = {"api": error_api, "error": errors.get(p.request, TXN_ERROR),
                  "variant": "refuse" if p.kind == "refused" else "replace",
                  "transactional_id": txn, "next": 2, "trigger": "forged"}
    fault["params"] = params
    return fault


def copier_restart(trial: tuple[Perturbation, ...], faults: list[dict]) -> dict:
    """The copier workload's restart, after the trial's perturbation (``faults``, one per
    cell of ``trial``): the copier killed inside a transaction with a send and started
    again COPIER_DOWN_S later. After a copy, in the first transaction it begins after it
    committed one since the broker answered the copy (``copy-committed``: what the late
    copy left pending is committed, and the copier has not moved its own offsets past it
    yet); otherwise in a transaction COPIER_KILL_AFTER_S after the last perturbation's
    window (``in-transaction``)."""
    kill: dict = {"kind": "producer-kill", "target": {"process": "producer:copier"},
                  "duration": COPIER_DOWN_S}
    copies = [f for p, f in zip(trial, faults, strict=True) if p.kind == "copy"]
    if copies:  # from the copy's start, for as long as its hold may act
        return {**kill, "start": copies[0]["start"],
                "params": {"trigger": "copy-committed",
                           "within": copies[0]["duration"] - COPIER_DOWN_S}}
    end = max(f["start"] + f["duration"] for f in faults)
    return {**kill, "start": end + COPIER_KILL_AFTER_S,
            "params": {"trigger": "in-transaction", "within": COPIER_KILL_WITHIN_S}}


def _healed_by(fault: dict) -> float:
    """When a fault has healed at the latest: a kill first waits for its trigger."""
    wait = (fault["params"].get("within", 0) if fault["kind"] == "producer-kill" else 0)
    return fault["start"] + wait + fault["duration"]


def scenario_spec(trial: tuple[Perturbation, ...], kafka_version: str, client: str) -> dict:
    """``trial`` as a scenario (``Scenario.to_json()`` form): the workload that gives its
    events (transactions that commit and abort; a copier for the copier's requests,
    restarted after the perturbation; the replication listener behind the proxy for
    WriteTxnMarkers), one fault per perturbation (a pair's second starts 8 s later)."""
    tv2 = speaks_tv2(kafka_version, client)
    if any(workload_of(p) == "app" for p in trial):
        return app_scenario_spec(trial, client)
    copier = any(workload_of(p) == "copier" for p in trial)
    held_own = all(p.kind == "held" and p.request == "Produce" for p in trial)
    faults = [fault_of(p, tv2, HOLD_START_S + 8 * i) for i, p in enumerate(trial)]
    if copier:
        faults.append(copier_restart(trial, faults))
    # the load outlasts every fault (they must heal before the drain), a kill's wait for
    # its trigger included: the restarted copier copies again before the load ends
    load_s = max([LOAD_S] + [_healed_by(f) + 1 for f in faults])
    workload = {"modes": ["idempotent", "copier"] if copier else ["transactional"],
                "partitions": 3, "record_size": 100, "rate": 100.0, "duration_s": load_s,
                "txn_size": 5 if copier else 10,
                # a held Produce aborts its own transaction (the batch expires): every other
                # transaction commits, so what lands late is committed with one of them
                "abort_fraction": (COPIER_ABORT_FRACTION if copier
                                   else 0.0 if held_own else 0.5)}
    return {
        "name": f"explore-{key_of(trial)}",
        "description": "verifier explore: " + "; ".join(str(p) for p in trial),
        "workload": workload,
        "faults": faults,
        "sink": "exactly-once", "drain_timeout_s": 60.0, "connections": {},
        # the client gives a held request up after 3 s and a batch after 7 s; one batch
        # per partition per transaction (docs/known-bugs.md, "Why one batch")
        "clients": {"request_timeout_ms": 3000, "delivery_timeout_ms": 7000,
                    "linger_ms": 200},
        **({"proxy_replication": True}
           if any(p.request == "WriteTxnMarkers" for p in trial) else {}),
    }


def app_scenario_spec(trial: tuple[Perturbation, ...], client: str) -> dict:
    """An app workload's trial: an idempotent input the application copies (run with
    ``--app`` :func:`app_of` and APP_INSTANCES instances: :func:`app_run`), the copy taken
    from instance APP_COPIED once the group has settled, and a third instance joining 2 s
    later for APP_JOIN_S s (a scale-out: the rebalance that releases the copy, and a second
    when it leaves). The application's own client settings are its preset's."""
    start = APP_HOLD_START_S
    faults = [fault_of(p, True, start, client) for p in trial]
    faults.append({"kind": "scale-out", "target": {"apps": True}, "start": start + 2,
                   "duration": APP_JOIN_S})
    load_s = max([LOAD_S] + [_healed_by(f) + 6 for f in faults])
    return {
        "name": f"explore-{key_of(trial)}",
        "description": "verifier explore: " + "; ".join(str(p) for p in trial),
        # txn_size and abort_fraction are the transactional generator's (none runs
        # here): the workload's defaults, written as the file parses back
        "workload": {"modes": ["idempotent"], "partitions": 3, "record_size": 100,
                     "rate": 100.0, "duration_s": load_s, "txn_size": 10,
                     "abort_fraction": 0.2},
        "faults": faults,
        "sink": "exactly-once", "drain_timeout_s": 60.0, "connections": {}, "clients": {},
    }


def app_run(trial: tuple[Perturbation, ...], client: str) -> tuple[str, str, int] | None:
    """The application a trial runs beside its scenario (``--app``), or None: (preset,
    the Java release it is built against or "", instances)."""
    if not any(workload_of(p) == "app" for p in trial):
        return None
    preset, version = app_of(client)
    return preset, version, APP_INSTANCES
