"""A perturbation of the explore space as a scenario `verifier chaos` runs, pure: the
fault that makes it happen in the proxy's existing params (``hold``, ``ack-loss``,
``error-answer``), the workload that gives its release event (transactions that commit and
abort; the copier, restarted after the perturbation; a consumer application's instances
and one joining), and the run's length (docs/explore.md).

The copier workload (TxnOffsetCommit, AddOffsetsToTxn) restarts its copier after the
perturbation, as a deployment restarts one (:func:`copier_restart`): a copier reads its
group's committed offsets only when it starts, so offsets committed wrongly show only then.
The app workload (:func:`app_of`, :func:`app_scenario_spec`): the client's transactional
copier preset, two instances, a copy of an instance's request released by the SyncGroup
answer after a third instance joined.
"""

from __future__ import annotations

from verifier.orchestration.explore.space import (
    REQUESTS,
    Perturbation,
    key_of,
    workload_of,
)

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
