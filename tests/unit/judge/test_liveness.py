"""A stall the fault caused is a liveness finding about the client, not a fault that
missed the column (verifier.judge.liveness, through verifier.judge.exposure and the
verdict rule), on hand-built histories: a kill of the column's transaction coordinator
that left its generator stuck to the end of the load (the container tier's CI failure of
2026-11-29), against a generator that stood still before the fault."""

from __future__ import annotations

from verifier.judge import exposure as E
from verifier.judge import verdict as V
from verifier.judge.faults.facts import ColumnSpec, RunFacts, Sends, Txn

T0 = 1_000_000  # ms: the broker kill
HEAL = T0 + 9_000  # the killed broker restarted and the cluster ready again
LOAD_END = T0 + 12_000  # the last send of the run (the other column kept going)


def sends(times: list[int]) -> Sends:
    return Sends(list(times), [0] * len(times), [t + 5 for t in times], [None] * len(times))


def every(start: int, end: int, step: int = 100) -> list[int]:
    return list(range(start, end, step))


def tx_col() -> ColumnSpec:
    return ColumnSpec(name="transactional", mode="transactional", pids=("tx-0",),
                      topics=("r.tx",), transactional=True,
                      isolations=("read_committed",))


def alo_col() -> ColumnSpec:
    return ColumnSpec(name="at-least-once", mode="at-least-once", pids=("alo-0",),
                      topics=("r.alo",))


def coordinator_kill(fid: int = 1, node: int = 1) -> list[dict]:
    """broker-kill of the leader of r.alo-0, which was also the coordinator of r.tx-0
    when ``node`` is 1 (start detail as verifier.harness.faults.kinds.broker writes it)."""
    target = {"leader": {"topic": "r.alo", "partition": 0}}
    detail = {"node": node, "signal": "SIGKILL", "leads": [["r.alo", 0]],
              "coordinators": {"r.tx-0": {"pid": "tx-0", "node": 1}},
              "coordinator_of": ["r.tx-0"] if node == 1 else []}
    base = {"fault": "broker-kill", "target": target, "id": fid}
    return [{"type": "invoke", "f": "start", **base, "t": T0},
            {"type": "ok", "f": "start", **base, "t": T0, "detail": detail},
            {"type": "invoke", "f": "heal", **base, "t": T0 + 5_000},
            {"type": "ok", "f": "heal", **base, "t": HEAL, "detail": {"node": node}}]


def missed_producer_kill(fid: int, tried: int) -> list[dict]:
    """A producer kill of the transactional generator whose in-transaction trigger never
    came (not applied)."""
    base = {"fault": "producer-kill", "target": {"process": "producer:transactional"},
            "id": fid}
    return [{"type": "invoke", "f": "start", **base, "t": tried - 2_000},
            {"type": "fail", "f": "start", **base, "t": tried,
             "error": "trigger in-transaction did not come within 2 s (no open transaction "
                      "with a send)"}]


def judged(nemesis: list[dict], tx_times: list[int], txns: list[Txn]) -> dict:
    """The transactional column of a verdict document that would PASS, after the
    exposure and the verdict rule."""
    facts = RunFacts(nemesis=nemesis, columns=[tx_col(), alo_col()],
                     sends={"tx-0": sends(tx_times),
                            "alo-0": sends(every(T0 - 20_000, LOAD_END + 1))},
                     txns={"tx-0": txns}, topic_of={"tx-0": "r.tx", "alo-0": "r.alo"})
    doc = {"columns": [{"name": c.name, "verdict": V.PASS} for c in facts.columns]}
    V.apply_exposure(doc, E.exposure(facts))
    return doc["columns"][0]


def test_a_generator_stuck_after_its_coordinator_died_is_a_liveness_finding():
    # sending at 10/s until 1.5 s before the kill (its last transaction's commit was in
    # flight), then nothing answered to the end of the load; the transaction begun before
    # the kill never ended
    tx_times = every(T0 - 20_000, T0 - 1_500)
    txns = [Txn(1, T0 - 2_000, None)]
    c = judged(coordinator_kill() + missed_producer_kill(2, T0 + 11_000), tx_times, txns)
    kill, pkill = c["exposure"]["faults"]
    # the kill reached the column (its open transaction), and it stalled the client
    assert kill["stalled"] is True and kill["acted"] >= 1
    assert kill["exercised"] is True
    stall = kill["caused_stall"]
    assert stall["depended_on"] == ["the transaction coordinator of r.tx-0"]
    assert stall["last_send"] == T0 - 1_600 and stall["first_answered"] is None
    assert stall["no_progress_s"] == 13.6  # from its last send to the end of the load
    assert "the transaction coordinator of r.tx-0" in kill["liveness"]
    assert "no answered send until the load ended 12.0 s after it" in kill["liveness"]
    # the later producer kill could not find the stuck client in a transaction: it did
    # not miss the column by timing, the client was stuck (no NOT EXERCISED reason)
    assert pkill["applied"] is False and pkill["masked_by"] == 1
    assert pkill["exercised"] is None and "why" not in pkill
    # the delivery promise was tested: the verdict stays, the finding stands beside it
    assert c["verdict"] == V.PASS
    assert c["liveness"] == [kill["liveness"]]
    assert "not_exercised" not in c


def test_a_generator_that_stood_still_before_the_fault_is_still_not_exercised():
    # the same kill of its coordinator, but the column had stopped 30 s before it
    tx_times = every(T0 - 60_000, T0 - 30_000)
    txns = [Txn(1, T0 - 31_000, T0 - 30_000)]
    c = judged(coordinator_kill(), tx_times, txns)
    (kill,) = c["exposure"]["faults"]
    assert kill["stalled"] is True and "caused_stall" not in kill
    assert "liveness" not in kill and "liveness" not in c
    assert c["verdict"] == V.NOT_EXERCISED
    # the reason says why the stall is not the fault's: the column stood still before it
    (why,) = c["not_exercised"]
    assert "its last send 30.1 s before it" in why, why


def test_a_stall_during_a_kill_of_a_broker_it_did_not_depend_on_is_not_its_doing():
    # sending until just before the kill, but broker 2 was neither its coordinator (on 1)
    # nor a leader of its partitions: the fault missed it, whatever stopped the client
    tx_times = every(T0 - 20_000, T0 - 1_500)
    c = judged(coordinator_kill(node=2), tx_times, [Txn(1, T0 - 2_000, None)])
    assert c["verdict"] == V.NOT_EXERCISED and "liveness" not in c
    assert "broker 2 was neither its transaction coordinator nor a leader" in \
        c["not_exercised"][0]


def test_a_client_sending_at_the_kill_and_stuck_after_it_is_a_finding_too():
    # sending right up to the kill (so not "stalled": it was at work when it came), then
    # nothing answered to the end of the load (measured on a real coordinator kill)
    tx_times = every(T0 - 20_000, T0 - 500)
    c = judged(coordinator_kill(), tx_times, [Txn(1, T0 - 2_000, None)])
    (kill,) = c["exposure"]["faults"]
    assert kill["stalled"] is False and kill["exercised"] is True
    assert kill["caused_stall"]["finding"] is True
    assert c["verdict"] == V.PASS and c["liveness"] == [kill["liveness"]]


def test_a_client_that_answers_again_soon_after_the_heal_was_exercised_without_a_finding():
    # blocked while its coordinator was down, answering again 2 s after the heal
    tx_times = every(T0 - 20_000, T0 - 1_500) + every(HEAL + 2_000, LOAD_END)
    c = judged(coordinator_kill(), tx_times, [Txn(1, T0 - 2_000, HEAL + 2_100)])
    (kill,) = c["exposure"]["faults"]
    assert kill["caused_stall"]["finding"] is False and "liveness" not in kill
    assert kill["caused_stall"]["first_answered"] == {"invoked": HEAL + 2_000,
                                                      "answered": HEAL + 2_005}
    assert c["verdict"] == V.PASS and "liveness" not in c
