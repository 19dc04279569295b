"""Exposure per column and fault (verifier.judge.exposure), on hand-written runs."""

from __future__ import annotations

from verifier.judge import exposure as E
from verifier.judge import verdict as V
from verifier.judge.faults.facts import Batch, ColumnSpec, RunFacts, Sends, Txn
from verifier.judge.load_rates import load_rates

T0 = 1_000_000  # ms


def sends(times, parts=None, done_after=5, txn=None, never_done=()):
    parts = parts or [0] * len(times)
    done = [None if t in never_done else t + done_after for t in times]
    return Sends(list(times), list(parts), done, [txn] * len(times))


def col(name="at-least-once", pids=("alo-0",), transactional=False, pipeline=None):
    return ColumnSpec(name=name, mode=name if pipeline is None else f"pipeline:{pipeline}",
                        pids=tuple(pids), topics=("run.t",), transactional=transactional,
                        pipeline=pipeline, isolations=("read_committed", "read_uncommitted"))


def fault(fid, kind, target, start, end, start_type="ok", start_detail=None,
          heal_detail=None, error=None):
    ops = [{"type": "invoke", "f": "start", "fault": kind, "target": target, "id": fid,
            "t": start},
           {"type": start_type, "f": "start", "fault": kind, "target": target, "id": fid,
            "t": start, "detail": start_detail or {}, "error": error}]
    if start_type != "fail":
        ops.append({"type": "ok", "f": "heal", "fault": kind, "target": target, "id": fid,
                    "t": end, "detail": heal_detail or {}})
    return ops


def steady(rate_per_s=50, start=T0 - 20_000, end=T0 + 30_000, gap=None):
    """Invoke times at a steady rate, with an optional (lo, hi) gap of no sends."""
    step = 1000 // rate_per_s
    return [t for t in range(start, end, step) if not (gap and gap[0] <= t < gap[1])]


def run(nemesis, columns, **kw):
    return E.exposure(RunFacts(nemesis=nemesis, columns=columns,
                                 topic_of={"alo-0": "run.t", "alo-1": "run.t", "tx-0": "run.t"},
                                 **kw))


def test_ack_loss_counts_each_columns_own_hits():
    clients = {"verifier.generator.alo-0": [40, 3], "verifier.generator.alo-1": [38, 0]}
    nem = fault(1, "ack-loss", {"all": True}, T0, T0 + 10_000,
                heal_detail={"matched": 78, "hits": 3, "clients": clients})
    got = run(nem, [col("a", ("alo-0",)), col("b", ("alo-1",))],
              sends={"alo-0": sends(steady()), "alo-1": sends(steady())})
    assert got["a"]["exercised"] is True and got["a"]["faults"][0]["acted"] == 3
    assert got["b"]["exercised"] is False
    assert "acted on none" in got["b"]["reasons"][0]


def test_a_hold_on_end_txn_concerns_only_the_column_that_sent_one():
    rule = {"api_keys": [26], "transactional_id": "run.tx-0"}
    nem = fault(1, "hold", {"all": True}, T0, T0 + 5_000, start_detail={"rule": rule},
                heal_detail={"matched": 1, "hits": 1,
                             "clients": {"verifier.generator.tx-0": [1, 1]}})
    got = run(nem, [col("alo", ("alo-0",)), col("tx", ("tx-0",), transactional=True)],
              sends={"alo-0": sends(steady()), "tx-0": sends(steady())})
    assert got["alo"]["faults"] == [] and got["alo"]["exercised"] is True
    assert got["tx"]["faults"][0]["acted"] == 1


def test_broker_kill_counts_sends_to_partitions_the_target_led():
    times = steady(rate_per_s=50)
    parts = [i % 3 for i in range(len(times))]
    leads = [["run.t", 1]]
    nem = fault(1, "broker-kill", {"node": 2}, T0, T0 + 2_000, start_detail={"leads": leads})
    got = run(nem, [col()], sends={"alo-0": sends(times, parts)})
    # 2 s at 50/s to 1 partition of 3: ~33 sends invoked, plus those in flight at T0
    acted = got["at-least-once"]["faults"][0]["acted"]
    assert 30 <= acted <= 36
    nothing_led = fault(1, "broker-kill", {"node": 2}, T0, T0 + 2_000,
                        start_detail={"leads": [["other.topic", 0]]})
    got = run(nothing_led, [col()], sends={"alo-0": sends(times, parts)})
    assert got["at-least-once"]["exercised"] is False


def test_a_generator_stopped_before_the_fault_is_not_exercised_one_blocked_by_it_is():
    nem = fault(1, "broker-pause", {"node": 1}, T0, T0 + 8_000)
    # stopped (SIGSTOP) 3 s before the pause, continued 2 s after the heal; its last
    # sends stay in flight (the stopped process never learnt their outcome)
    stopped = steady(gap=(T0 - 3_000, T0 + 10_000))
    before = [t for t in stopped if t < T0]
    got = run(nem, [col()], sends={"alo-0": sends(stopped, never_done=before[-3:])})
    e = got["at-least-once"]
    assert e["faults"][0]["acted"] > 0  # three sends were in flight ...
    assert e["faults"][0]["stalled"] is True  # ... but the load had stopped
    assert e["exercised"] is False and "stalled" in e["reasons"][0]
    # blocked by the fault itself: sending up to the start, nothing during the pause
    blocked = steady(gap=(T0 + 1, T0 + 8_000))
    got = run(nem, [col()], sends={"alo-0": sends(blocked)})
    assert got["at-least-once"]["faults"][0]["stalled"] is False
    assert got["at-least-once"]["exercised"] is True


def test_producer_kill_counts_unacknowledged_sends_and_the_open_transaction():
    times = steady(end=T0 + 1)
    unacked = times[-4:]
    nem = fault(1, "producer-kill", {"process": "producer:tx"}, T0, T0 + 2_000)
    s = Sends(times, [0] * len(times), [None if t in unacked else t + 5 for t in times],
                [t // 1000 for t in times])  # one transaction per second
    txns = [Txn(k, k * 1000, None if k == T0 // 1000 else k * 1000 + 999)
            for k in sorted({t // 1000 for t in times})]
    got = run(nem, [col("tx", ("tx-0",), transactional=True)], sends={"tx-0": s},
              txns={"tx-0": txns})
    e = got["tx"]["faults"][0]
    # 4 unacknowledged, and the open transaction (second T0 // 1000) holds the one send
    # invoked at T0 exactly
    assert e["acted"] == 4 + 1, e
    assert "open transaction" in e["what"]
    # a kill of another column's producer does not concern this one
    got = run(nem, [col("alo", ("alo-0",))], sends={"alo-0": s})
    assert got["alo"]["faults"] == []


def test_pipeline_kill_between_batches_is_not_exercised_mid_batch_is():
    batches = [Batch(0, T0 - 5_000, T0 - 4_000, {("run.t", 0): (0, 100)}),
               Batch(1, T0 - 1_000, T0 + 500, {("run.t", 0): (100, 130)})]
    kill_mid = fault(1, "process-kill", {"process": "pipeline/p"}, T0, T0 + 3_000)
    pipe = col("pipeline:p", (), pipeline="p")
    got = run(kill_mid, [pipe], batches={"pipeline/p": batches})
    assert got["pipeline:p"]["faults"][0]["acted"] == 30
    kill_between = fault(1, "process-kill", {"process": "pipeline/p"}, T0 - 3_000, T0)
    got = run(kill_between, [pipe], batches={"pipeline/p": batches})
    assert got["pipeline:p"]["exercised"] is False
    # a producer column is not concerned by a pipeline's kill
    got = run(kill_mid, [col()], sends={"alo-0": sends(steady())})
    assert got["at-least-once"]["faults"] == []


def test_a_kill_in_a_batch_the_checkpoint_no_longer_keeps_counts_from_its_detail():
    """The checkpoint keeps a query's latest 20 batches: a kill in batch 1 of a run that
    went on to batch 23 finds 3-23 only, and the kill's own detail says what it hit."""
    kept = [Batch(n, T0 + n * 10_000, T0 + n * 10_000 + 9_000, {("run.t", 0): (n, n + 1)})
            for n in range(3, 24)]
    detail = {"mid_batch": True, "batch": 1, "batch_offsets": 3089, "batch_in_flight": True}
    kill = fault(1, "executor-kill", {"process": "pipeline/p"}, T0, T0 + 3_000,
                 start_detail=detail)
    pipe = col("pipeline:p", (), pipeline="p")
    got = run(kill, [pipe], batches={"pipeline/p": kept})
    (e,) = got["pipeline:p"]["faults"]
    assert e["acted"] == 3089 and e["exercised"] is True, e
    assert "from the kill's detail" in e["what"], e
    # a batch the checkpoint keeps, committed before the kill: between batches, as before
    between = fault(1, "executor-kill", {"process": "pipeline/p"}, T0 + 39_500,
                    T0 + 40_000, start_detail={**detail, "batch": 3})
    got = run(between, [pipe], batches={"pipeline/p": kept})
    assert got["pipeline:p"]["exercised"] is False


def test_a_real_time_kill_counts_the_batch_its_restart_logged():
    """Spark's real-time mode logs a batch's offsets at its end: at the kill the batch in
    flight is in no log, and the restarted query logs it again (from the last commit)."""
    batches = [Batch(0, T0 - 4_000, T0 - 3_900, {("run.t", 0): (0, 600)}),
               Batch(1, T0 + 30_000, T0 + 30_100, {("run.t", 0): (600, 1400)})]
    pipe = col("pipeline:p", (), pipeline="p")
    rt = fault(1, "process-kill", {"process": "pipeline/p"}, T0, T0 + 3_000,
               start_detail={"mid_batch": True, "batch": None, "hold": "real-time",
                             "batch_in_flight": True})
    (e,) = run(rt, [pipe], batches={"pipeline/p": batches})["pipeline:p"]["faults"]
    assert e["acted"] == 800 and "real-time batch" in e["what"], e
    # a micro-batch kill between the same batches acted on nothing, as before
    mb = fault(1, "process-kill", {"process": "pipeline/p"}, T0, T0 + 3_000,
               start_detail={"mid_batch": True, "batch": 1, "hold": "source"})
    got = run(mb, [pipe], batches={"pipeline/p": batches})
    assert got["pipeline:p"]["exercised"] is False


def test_not_applied_is_not_exercised_unknown_outcome_is_left_open():
    failed = fault(1, "broker-kill", {"node": 1}, T0, T0 + 1, start_type="fail",
                   error="node 1 is dead, not running")
    got = run(failed, [col()], sends={"alo-0": sends(steady())})
    assert got["at-least-once"]["exercised"] is False
    assert "was not applied: node 1 is dead" in got["at-least-once"]["reasons"][0]
    maybe = fault(1, "broker-kill", {"node": 1}, T0, T0 + 1_000, start_type="info")
    got = run(maybe, [col()], sends={"alo-0": sends(steady())})
    assert got["at-least-once"]["exercised"] is None


def test_load_rates_inside_and_outside_windows():
    invoked = list(range(0, 10_000, 10))  # 100/s over 10 s
    rate_out, rates = load_rates(invoked, [(2_000, 4_000)])
    assert round(rate_out) == 100 and round(rates[(2_000, 4_000)]) == 100
    gap = [t for t in invoked if not 2_000 <= t < 4_000]
    rate_out, rates = load_rates(gap, [(2_000, 4_000)])
    assert round(rate_out) == 100
    assert rates[(2_000, 4_000)] < 1


def _doc(verdicts):
    return {"columns": [{"name": n, "verdict": v} for n, v in verdicts.items()]}


def _code(doc: dict) -> int:
    from verifier.assess import exitcodes as X

    return X.set_run(doc)


def test_apply_exposure_turns_only_a_pass_into_not_exercised():
    from verifier.rundata.vocab import EXIT_ANOMALY, EXIT_NOT_EXERCISED, EXIT_OK

    missed = {"exercised": False, "faults": [], "reasons": ["fault ack-loss #1 acted on none"]}
    doc = _doc({"a": V.PASS, "b": V.FAIL, "c": V.UNKNOWN})
    V.apply_exposure(doc, {"a": missed, "b": missed, "c": missed})
    assert [c["verdict"] for c in doc["columns"]] == [V.NOT_EXERCISED, V.FAIL, V.UNKNOWN]
    assert doc["columns"][0]["not_exercised"] == missed["reasons"]
    assert _code(doc) == EXIT_ANOMALY
    doc = _doc({"a": V.PASS, "b": V.PASS})
    V.apply_exposure(doc, {"a": missed, "b": {"exercised": True, "faults": [], "reasons": []}})
    assert _code(doc) == EXIT_NOT_EXERCISED
    doc = _doc({"a": V.PASS, "b": V.PASS})
    V.apply_exposure(doc, {"a": {"exercised": True, "faults": [], "reasons": []}})
    assert [c["verdict"] for c in doc["columns"]] == [V.PASS] * 2 and _code(doc) == EXIT_OK


def test_a_proxy_rule_counts_what_it_met_and_did_per_client():
    """The per-client counts the exposure reads (heal detail ``clients``)."""
    from verifier.harness.faults.rules import Rule

    rule = Rule.from_json({"kind": "drop_response", "every": 2}, 1)
    for client in ("verifier.generator.a", "verifier.generator.b", "verifier.generator.a",
                   "verifier.generator.a"):
        rule.decide_response(0, client)
    rule.decide_response(1, "verifier.generator.b")  # a Fetch response: not this rule's
    assert rule.to_json()["clients"] == {"verifier.generator.a": [3, 1],
                                         "verifier.generator.b": [1, 1]}
    assert (rule.matched, rule.hits) == (4, 2)


def test_a_broker_fault_counts_the_transaction_its_commit_waited_on():
    """A transactional generator blocked in a commit by a paused broker invokes nothing
    during the pause, and had nothing in flight: the open transaction is what was hit."""
    times = steady(gap=(T0 - 200, T0 + 8_001))
    s = Sends(times, [0] * len(times), [t + 5 for t in times], [1] * len(times))
    nem = fault(1, "broker-pause", {"node": 1}, T0, T0 + 8_000)
    tx = col("tx", ("tx-0",), transactional=True)
    got = run(nem, [tx], sends={"tx-0": s}, txns={"tx-0": [Txn(1, T0 - 900, T0 + 8_100)]})
    assert got["tx"]["faults"][0]["acted"] == 1 and got["tx"]["exercised"] is True
    got = run(nem, [tx], sends={"tx-0": s}, txns={"tx-0": [Txn(1, T0 - 900, T0 - 300)]})
    assert got["tx"]["exercised"] is False


def test_an_error_answer_counts_the_answers_it_forged_for_each_column():
    """Its per-client hits are the answers it forged (refused or replaced), not the
    requests it matched: a column it matched and never answered was not exercised; one
    on a transactional id concerns only the column that uses it."""
    rule = {"kind": "error_answer", "api_keys": [0], "variant": "replace",
            "error": "REQUEST_TIMED_OUT"}
    clients = {"verifier.generator.alo-0": [30, 4], "verifier.generator.alo-1": [25, 0]}
    nem = fault(1, "error-answer", {"all": True}, T0, T0 + 10_000, start_detail={"rule": rule},
                heal_detail={"matched": 55, "hits": 4, "clients": clients,
                             "chosen": 5, "unforged": 1})
    got = run(nem, [col("a", ("alo-0",)), col("b", ("alo-1",))],
              sends={"alo-0": sends(steady()), "alo-1": sends(steady())})
    assert got["a"]["exercised"] is True and got["a"]["faults"][0]["acted"] == 4
    assert got["b"]["exercised"] is False and "acted on none" in got["b"]["reasons"][0]
    txn_rule = {**rule, "variant": "refuse", "error": "NOT_LEADER_OR_FOLLOWER",
                "transactional_id": "run.tx-0"}  # its Produce requests only
    nem = fault(1, "error-answer", {"all": True}, T0, T0 + 5_000,
                start_detail={"rule": txn_rule},
                heal_detail={"matched": 2, "hits": 2,
                             "clients": {"verifier.generator.tx-0": [2, 2]}})
    got = run(nem, [col("alo", ("alo-0",)), col("tx", ("tx-0",), transactional=True)],
              sends={"alo-0": sends(steady()), "tx-0": sends(steady())})
    assert got["alo"]["faults"] == [] and got["tx"]["faults"][0]["acted"] == 2


def test_an_error_answer_rule_counts_what_it_forged_not_what_it_chose():
    """The rule's own counts (heal detail ``clients``): matched per client when it
    chooses, forged when the answer went to the client."""
    from verifier.harness.faults import error_rules
    from verifier.harness.faults.rules import Rule
    from verifier.harness.kafka_wire import RequestIdentity

    rule = Rule.from_json({"kind": "error_answer", "error": "REQUEST_TIMED_OUT",
                           "variant": "replace", "next": 2}, 1)
    for client in ("verifier.generator.a", "verifier.generator.b", "verifier.generator.a"):
        error_rules.choose(rule, RequestIdentity(0, 9, 1, client, acks=-1))
    error_rules.forged(rule, "verifier.generator.a")
    error_rules.missed(rule)  # b's answer could not be forged: it went on untouched
    doc = rule.to_json()
    assert doc["clients"] == {"verifier.generator.a": [2, 1], "verifier.generator.b": [1, 0]}
    assert (doc["matched"], doc["chosen"], doc["hits"], doc["unforged"]) == (3, 2, 1, 1)


def test_an_error_answer_to_one_client_concerns_that_client_s_column_alone():
    rule = {"kind": "error_answer", "api_keys": [0], "variant": "refuse",
            "error": "NOT_LEADER_OR_FOLLOWER", "client_id": "verifier.generator.alo-1"}
    nem = fault(1, "error-answer", {"all": True}, T0, T0 + 10_000, start_detail={"rule": rule},
                heal_detail={"matched": 9, "hits": 3,
                             "clients": {"verifier.generator.alo-1": [9, 3]}})
    got = run(nem, [col("a", ("alo-0",)), col("b", ("alo-1",))],
              sends={"alo-0": sends(steady()), "alo-1": sends(steady())})
    assert got["a"]["faults"] == [] and got["a"]["exercised"] is True
    assert got["b"]["faults"][0]["acted"] == 3
