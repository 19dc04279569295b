"""Exposure is what happened, not what was asked (issue 45, DESIGN §11), on hand-built
fault histories: a hold or a copy acts on a column when it is released into the event it
waits for and answered, never when held or released at its bound; a copy counts for the
column whose transactional id it carries; not measured is never PASS; a missed trigger
concerns its rule's column alone; a user's own client id is its column's."""

from __future__ import annotations

from verifier.judge import exposure as E
from verifier.judge import verdict as V
from verifier.judge.faults.facts import ColumnSpec, RunFacts, Sends

T0 = 1_000_000
RUN = "run"
TXN = f"{RUN}.transactional-0"
GEN = "verifier.generator."
#: the broker's id for its own inter-broker requests (the coordinator's WriteTxnMarkers)
COORDINATOR = "broker-1"


def col(name, pid, transactional=False, client_ids=()):
    return ColumnSpec(name=name, mode=name, pids=(pid,), topics=(f"{RUN}.{name}",),
                      transactional=transactional,
                      transactional_ids=(f"{RUN}.{pid}",) if transactional else (),
                      client_ids=tuple(client_ids))


TX, TX2 = col("transactional", "transactional-0", True), col("tx2", "tx2-0", True)
IDEM = col("idempotent", "idempotent-0")


def steady(start=T0 - 20_000, end=T0 + 30_000, step=20):
    times = list(range(start, end, step))
    return Sends(times, [0] * len(times), [t + 5 for t in times], [None] * len(times))


def facts(nemesis, columns=(TX, TX2, IDEM), **kw):
    return RunFacts(nemesis=nemesis, columns=list(columns),
                    sends={c.pids[0]: steady() for c in columns}, **kw)


def hold_rule(api_keys=(26,), txn=TXN, release_on=True, **more):
    rule = {"id": 1, "kind": "hold", "api_keys": list(api_keys), "transactional_id": txn,
            **more}
    if release_on:
        rule["release_on"] = {"api_key": 0, "direction": "response", "transactional_id": txn}
    return rule


def hold_fault(rule, heal=None, start_type="ok", error=None, start_detail=None):
    ops = [{"type": "invoke", "f": "start", "fault": "hold", "target": {"all": True},
            "id": 1, "t": T0},
           {"type": start_type, "f": "start", "fault": "hold", "target": {"all": True},
            "id": 1, "t": T0, "error": error,
            **({"detail": start_detail} if start_detail is not None
               else {"detail": {"rule": rule}} if start_type == "ok" else {})}]
    if heal is not None:
        ops.append({"type": "ok", "f": "heal", "fault": "hold", "target": {"all": True},
                    "id": 1, "t": T0 + 10_000, "detail": heal})
    return ops


def tally(client_id, txn=TXN, held=1, on_event=0, at_bound=0, answered=0, errors=None):
    return {"client_id": client_id, "transactional_id": txn, "held": held,
            "on_event": on_event, "at_bound": at_bound, "answered": answered,
            "errors": errors or {}}


def heal(*tallies, clients=None):
    return {"rule": 1, "matched": 5, "hits": sum(t["held"] for t in tallies),
            "clients": clients if clients is not None else
            {t["client_id"]: [5, t["held"]] for t in tallies}, "holds": list(tallies)}


# ---- 1. released into its event and answered, not held or released at its bound ----------

def test_a_hold_released_at_its_bound_did_not_act():
    nem = hold_fault(hold_rule(), heal(tally(GEN + "transactional-0", at_bound=1)))
    got = E.exposure(facts(nem))["transactional"]
    assert got["exercised"] is False and got["faults"][0]["acted"] == 0, got
    assert "0 released into the event, 1 at the rule's time bound" in got["reasons"][0]


def test_a_hold_released_into_its_event_and_answered_acted_with_the_answer_shown():
    nem = hold_fault(hold_rule(), heal(tally(GEN + "transactional-0", on_event=1,
                                             answered=1, errors={"90": 1})))
    got = E.exposure(facts(nem))["transactional"]
    assert got["exercised"] is True and got["faults"][0]["acted"] == 1, got
    assert "error 90 ×1" in got["faults"][0]["what"]


def test_released_into_its_event_but_never_answered_did_not_act():
    nem = hold_fault(hold_rule(), heal(tally(GEN + "transactional-0", on_event=1)))
    assert E.exposure(facts(nem))["transactional"]["exercised"] is False


def test_a_run_recorded_before_the_counts_is_read_from_its_hold_events():
    """No ``holds`` in the heal detail: the hold, release and answer events say it
    (a release with its trigger went into the event; one without, at the bound)."""
    req = {"api": "EndTxn", "api_key": 26, "client_id": GEN + "transactional-0",
           "transactional_id": TXN}

    def event(f, hold, **detail):
        return {"type": "event", "f": f, "fault": "hold", "target": {"all": True}, "id": 1,
                "t": T0 + 100, "detail": {"rule": 1, "hold": hold, "request": req, **detail}}

    heal_detail = {"rule": 1, "matched": 9, "hits": 2}
    nem = hold_fault(hold_rule(), heal_detail)
    nem[2:2] = [event("hold", 1), event("hold", 2),
                event("release", 1, reason="Produce response", trigger={"api_key": 0}),
                event("release", 2, reason="after 15000 ms"),
                event("answer", 1, response={"error_code": 90}),
                event("answer", 2, response={"error_code": 0})]
    got = E.exposure(facts(nem))["transactional"]["faults"][0]
    assert got["acted"] == 1 and "error 90 ×1" in got["what"], got
    assert "2 held, 1 released into the event, 1 at the rule's time bound" in got["what"]


# ---- 2. a copy counts for the column whose transactional id it carries -----------------

def _markers_copy(**counts):
    rule = hold_rule(api_keys=(27,), client_view="copy")
    return hold_fault(rule, heal(tally(COORDINATOR, **counts)))


def test_the_coordinators_marker_copy_counts_for_its_transactional_ids_column():
    got = E.exposure(facts(_markers_copy(on_event=1, answered=1, errors={"47": 1})))
    assert got["transactional"]["faults"][0]["acted"] == 1
    assert got["transactional"]["exercised"] is True
    assert got["tx2"]["faults"] == [] and got["idempotent"]["faults"] == []


def test_marker_copies_all_released_at_their_bound_leave_the_column_not_exercised():
    """Not "no fault": the column shows the copy and that it never met its window."""
    got = E.exposure(facts(_markers_copy(held=4, at_bound=4)))
    assert E.summary(got["transactional"]) == "hold #1: 0 ✗"
    assert got["transactional"]["exercised"] is False
    doc = {"columns": [{"name": "transactional", "verdict": V.PASS}]}
    V.apply_exposure(doc, got)
    assert doc["columns"][0]["verdict"] == V.NOT_EXERCISED


# ---- 3. not measured is never PASS ----------------------------------------------------

def test_a_proxy_rule_without_per_client_counts_leaves_the_column_unknown_with_why():
    nem = [{"type": "invoke", "f": "start", "fault": "ack-loss", "target": {"all": True},
            "id": 1, "t": T0},
           {"type": "ok", "f": "start", "fault": "ack-loss", "target": {"all": True},
            "id": 1, "t": T0, "detail": {"rule": {"kind": "drop_response"}}},
           {"type": "ok", "f": "heal", "fault": "ack-loss", "target": {"all": True},
            "id": 1, "t": T0 + 10_000, "detail": {"rule": 1, "matched": 80, "hits": 7}}]
    got = E.exposure(facts(nem, columns=(IDEM,)))
    assert got["idempotent"]["exercised"] is None
    doc = {"columns": [{"name": "idempotent", "verdict": V.PASS, "reasons": []}]}
    V.apply_exposure(doc, got)
    c = doc["columns"][0]
    assert c["verdict"] == V.UNKNOWN, c
    assert c["reasons"] == ["exposure not measured: fault ack-loss #1: what it acted on was "
                            "not measured (per-client counts not recorded)"]


def test_a_hold_that_waits_for_an_event_without_its_counts_or_events_is_unknown():
    nem = hold_fault(hold_rule(), {"rule": 1, "matched": 3, "hits": 1,
                                   "clients": {GEN + "transactional-0": [3, 1]}})
    assert E.exposure(facts(nem))["transactional"]["exercised"] is None


# ---- 4. a missed trigger concerns its rule's column alone ------------------------------

def test_a_hold_whose_trigger_never_came_concerns_only_its_transactional_ids_column():
    removed = {**hold_rule(txn=f"{RUN}.tx2-0"), "matched": 0, "hits": 0, "clients": {}}
    nem = hold_fault(None, start_type="fail", start_detail={"node": None, "rule": removed},
                     error="trigger held did not come within 20 s")
    got = E.exposure(facts(nem))
    assert got["tx2"]["exercised"] is False
    assert "was not applied: trigger held did not come" in got["tx2"]["reasons"][0]
    assert got["transactional"]["faults"] == [] and got["transactional"]["exercised"] is True
    assert got["idempotent"]["faults"] == [] and got["idempotent"]["exercised"] is True


def test_a_missed_trigger_recorded_without_its_rule_still_concerns_every_producer():
    """A run recorded before the rule was kept: as before (nothing says whose it was)."""
    nem = hold_fault(None, start_type="fail", error="trigger held did not come within 20 s")
    got = E.exposure(facts(nem))
    assert [got[c]["exercised"] for c in ("transactional", "tx2", "idempotent")] == [False] * 3


# ---- 5. a user's own client id is its column's ------------------------------------------

def test_a_rule_that_met_a_users_own_client_id_concerns_and_counts_for_its_column():
    user = col("user:app.properties", "user-0", client_ids=("orders-service",))
    nem = [{"type": "invoke", "f": "start", "fault": "reset", "target": {"all": True},
            "id": 1, "t": T0},
           {"type": "ok", "f": "start", "fault": "reset", "target": {"all": True}, "id": 1,
            "t": T0, "detail": {"rule": {"kind": "reset", "api_keys": [26]}}},
           {"type": "ok", "f": "heal", "fault": "reset", "target": {"all": True}, "id": 1,
            "t": T0 + 5_000, "detail": {"rule": 1, "matched": 4, "hits": 2, "clients": {
                "orders-service": [4, 2]}}}]
    got = E.exposure(facts(nem, columns=(user, IDEM)))
    assert got["user:app.properties"]["faults"][0]["acted"] == 2
    assert got["idempotent"]["faults"] == []


def test_the_plan_names_each_producers_transactional_and_client_ids():
    from verifier.rundata.plan import PlannedProducer, RunPlan

    def producer(pid, expect, **overrides):
        return PlannedProducer(pid=pid, mode=pid.rsplit("-", 1)[0], expect=expect,
                               topic=f"{RUN}.t", overrides=overrides)

    plan = RunPlan(run=RUN, scenario="s", profile="quick", seed=1, sink="exactly-once",
                   environment="embedded", bootstrap_servers="x:1", producers={
                       "transactional-0": producer("transactional-0", "transactional"),
                       "user-0": producer("user-0", "transactional",
                                          **{"transactional.id": "orders-tx",
                                             "client.id": "orders-service"}),
                       "idempotent-0": producer("idempotent-0", "idempotent")})
    assert plan.transactional_ids() == {TXN: "transactional-0", "orders-tx": "user-0"}
    assert plan.client_ids() == {"orders-service": "user-0"}
