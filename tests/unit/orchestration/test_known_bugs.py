"""Known bugs as data and their grid (issue 33): the bug file, the runs it plans per broker
version, and the comparison of hand-written run documents with the documented status."""

from __future__ import annotations

import pytest

from verifier.orchestration import known_bugs as kb
from verifier.orchestration.scenario import load_profiles, load_scenario
from verifier.rundata.errors import UsageError

#: the current releases' rows (issue 50), checked by their own test below
CURRENT = ("4.2.2", "4.3.1", "4.4.0")


def test_kafka_20685_rows_are_the_applications_streams_release_on_the_newest_broker():
    """KAFKA-20685 is Kafka Streams' own: its rows differ by the application's release
    (4.1.2 affected, 4.2.2 fixed), on the newest broker, each a cluster of its own."""
    bug = next(b for b in kb.load_known_bugs() if b.id == "KAFKA-20685")
    assert {(c.kafka, c.app): c.status for c in bug.combinations} == {
        ("4.4.0", "streams-count-eos-flush:4.1.2"): "affected",
        ("4.4.0", "streams-count-eos-flush:4.2.2"): "fixed"}
    assert bug.columns == ("app:streams-count-eos-flush@read_committed",)
    assert "kafka-20685" in load_profiles()["known-bugs"].scenarios


def _bugs():
    """The bugs with their rows up to 4.1.1 (the grid these tests were written for)."""
    import dataclasses

    return [dataclasses.replace(b, combinations=tuple(
        c for c in b.combinations if c.kafka not in CURRENT)) for b in kb.load_known_bugs()]


def test_every_row_on_a_current_release_is_fixed_but_kafka_python_without_version_2():
    """Issue 50: each bug's documented status on 4.2.2, 4.3.1 and 4.4.0: fixed (fenced
    for kafka-python's own EndTxn) everywhere but KAFKA-17754 and (b) with kafka-python,
    which has no transaction version 2 on any broker; KAFKA-19479 is client-side (no
    broker row), KAFKA-20685 a bug of the application's Kafka Streams release (below)."""
    rows = {(b.id, c.kafka, c.client): c.status for b in kb.load_known_bugs()
            for c in b.combinations if c.kafka in CURRENT and not c.app}
    for v in CURRENT:
        assert {(i, c): s for (i, k, c), s in rows.items() if k == v} == {
            ("KAFKA-14402", "kafka-python"): "fixed", ("KAFKA-14402", "java"): "fixed",
            ("KAFKA-17754", "kafka-python"): "affected", ("KAFKA-17754", "java"): "fixed",
            ("KAFKA-17754 (own EndTxn)", "kafka-python"): "fenced",
            ("KAFKA-17754 (b)", "kafka-python"): "affected",
            ("KAFKA-17754 (b)", "java"): "fixed",
            ("KAFKA-15449", "kafka-python"): "fixed", ("KAFKA-19446", "java"): "fixed"}


def test_every_bug_names_a_scenario_columns_and_both_statuses():
    bugs = kb.load_known_bugs()
    assert "KAFKA-14402" in {b.id for b in bugs}
    profile = load_profiles()["known-bugs"]
    assert profile.known_bugs
    for bug in bugs:
        assert bug.scenario in profile.scenarios
        scenario = load_scenario(bug.scenario)
        # a generator's mode of the scenario, or the application every combination runs
        apps = {f"app:{c.app.partition(':')[0]}" for c in bug.combinations if c.app}
        assert all(c.split("@")[0] in (scenario.workload.modes if not apps else apps)
                   for c in bug.columns), bug.id
        assert not apps or all(c.app for c in bug.combinations), bug.id
        # an own-retry row documents what the client's own path does: fenced
        want = {"fenced"} if bug.id.endswith("(own EndTxn)") else {"affected", "fixed"}
        assert {c.status for c in bug.combinations} == want, bug.id
        assert bug.mechanism and bug.schedule


def test_kafka_14402_is_affected_before_3_6_and_with_the_verification_off():
    (bug,) = [b for b in _bugs() if b.id == "KAFKA-14402"]
    rows = {(c.client, c.kafka, c.setting_text(), c.status) for c in bug.combinations}
    off = "transaction.partition.verification.enable=false"
    assert rows == {("kafka-python", "3.5.2", "defaults", "affected"),
                    ("kafka-python", "4.1.1", off, "affected"),
                    ("kafka-python", "4.1.1", "defaults", "fixed"),
                    ("java", "3.5.2", "defaults", "affected"),  # any client
                    # the Java client 4.x at transaction version 2 fences the late batch
                    # by its epoch bump: its affected control is at version 0 too
                    ("java", "4.1.1", off + ", transaction.version=0 (feature)", "affected"),
                    ("java", "4.1.1", "defaults", "fixed")}


def test_kafka_17754_is_fixed_only_by_transaction_version_2_on_both_sides():
    (bug,) = [b for b in _bugs() if b.id == "KAFKA-17754"]
    fixed = [(c.kafka, c.client, c.features) for c in bug.combinations if c.status == "fixed"]
    assert fixed == [("4.1.1", "java:4.1.1", ())]
    # the client side of part 2: the Java client before 4.0 on the same cluster is affected
    assert [(c.kafka, c.status) for c in bug.combinations if c.client == "java:3.9.1"] == [
        ("4.1.1", "affected")]
    control = [c for c in bug.combinations if c.features]
    assert [(c.client, c.features, c.status) for c in control] == [
        ("java", (("transaction.version", 0),), "affected")]
    plans = kb.plan_known_bugs(_bugs(), {"kafka-17754": load_scenario("kafka-17754")})
    # the feature level gets a cluster of its own, after the default one of its version
    assert [p.key for p in plans] == ["3.5.2", "4.1.1", "4.1.1+transaction.version=0"]
    assert plans[2].clients == ["java"] and plans[2].features == (("transaction.version", 0),)


def test_kafka_17754_b_gets_past_the_partition_verification_without_version_2():
    (bug,) = [b for b in _bugs() if b.id == "KAFKA-17754 (b)"]
    rows = {(c.client, c.kafka, c.setting_text(), c.status) for c in bug.combinations}
    # kafka-python is affected on 4.1.1 at its defaults: unlike KAFKA-14402's late batch,
    # this one arrives once the partition is in the next transaction (same epoch)
    assert rows == {("java", "3.5.2", "defaults", "affected"),
                    ("kafka-python", "3.5.2", "defaults", "affected"),
                    ("kafka-python", "4.1.1", "defaults", "affected"),
                    ("java:4.1.1", "4.1.1", "defaults", "fixed")}
    release = load_scenario(bug.scenario).faults[0]["params"]["release_on"]
    assert (release["api_key"], release["ok"], release["after"]["api_key"]) == (24, True, 26)
    # released by the AddPartitionsToTxn that adds the late batch's partition
    assert release["partition"] == "same"
    plans = kb.plan_known_bugs(_bugs(), {"kafka-17754b": load_scenario("kafka-17754b")})
    assert [(p.key, p.clients) for p in plans] == [("3.5.2", ["java", "kafka-python"]),
                                                   ("4.1.1", ["kafka-python", "java:4.1.1"])]


def test_plan_one_cluster_per_version_variants_after_the_defaults():
    plans = kb.plan_known_bugs(_bugs(), {"kafka-14402": load_scenario("kafka-14402")},
                               clients=["kafka-python"])
    assert [p.kafka for p in plans] == ["3.5.2", "4.1.1"]
    names = [s.name for s in plans[1].scenarios]
    assert names == ["kafka-14402", "kafka-14402-verification-off"]
    off = plans[1].scenarios[1]
    assert off.broker.apply == "dynamic"
    assert off.broker.settings == {"transaction.partition.verification.enable": "false"}
    assert off.faults == plans[1].scenarios[0].faults  # the same schedule
    assert plans[0].scenarios[0].broker is None
    # --kafka-versions keeps only those combinations, in the order given
    only = kb.plan_known_bugs(_bugs(), {"kafka-14402": load_scenario("kafka-14402")},
                              versions=["4.1.1"], clients=["kafka-python"])
    assert [p.kafka for p in only] == ["4.1.1"] and len(only[0].cells) == 2
    # a bug whose scenario is not selected (--scenario) is left out
    assert kb.plan_known_bugs(_bugs(), {}) == []


#: a run whose forced request went into its window, and its evidence held (issue 45)
SHOWN = {"in_window": True, "open": None}
#: a run whose forced request went at its bound: it says nothing about the bug
STALE = {"in_window": False, "open": "copy released at its bound"}


@pytest.mark.parametrize("status, outcomes, evidence, match", [
    ("affected", ["FAIL", "FAIL", "FAIL"], [SHOWN] * 3, "yes"),
    ("affected", ["FAIL", "PASS", "FAIL"], [SHOWN] * 3, "NO"),
    ("affected", ["FAIL", "UNKNOWN", "FAIL"], [SHOWN] * 3, "open"),
    ("affected", [], [], "open"),
    ("fixed", ["PASS", "PASS", "PASS"], [SHOWN] * 3, "yes"),
    ("fixed", ["PASS", "FAIL"], [SHOWN] * 2, "NO"),
    ("fixed", ["PASS", "NOT EXERCISED"], [SHOWN] * 2, "open"),
    # on its own evidence: a FAIL not tied, a PASS at the bound say nothing
    ("affected", ["FAIL", "FAIL"], [SHOWN, {"in_window": True, "open": "not tied"}], "open"),
    ("affected", ["FAIL", "PASS"], [SHOWN, STALE], "open"),
    ("fixed", ["PASS", "PASS"], [SHOWN, STALE], "open"),
    ("fenced", ["PASS", "PASS"], [SHOWN] * 2, "yes"),
    ("fixed", ["FAIL"], [STALE], "NO"),  # a FAIL on a fixed row is a finding whatever forced it
])
def test_status_match(status, outcomes, evidence, match):
    assert kb.status_match(status, outcomes, evidence) == match


RUN = "r1"
LATE = {"api": "Produce", "transactional_id": f"{RUN}.transactional-0", "producer_id": 0,
        "producer_epoch": 0, "partitions": [{"topic": "t", "partition": 0, "records": 1}]}


def _late_produce_run(root, error: int):
    """A run folder whose nemesis history has KAFKA-14402's late Produce, released by the
    abort marker and answered with ``error`` (0: written at offset 40)."""
    import orjson

    root.mkdir(parents=True, exist_ok=True)
    run_dir = root / f"run-{error}"
    ev = {"type": "event", "fault": "hold", "target": {"all": True}, "id": 1}
    lines = [{"type": "header", "format": "nemesis-history", "version": 1, "run": RUN},
             {**ev, "f": "hold", "t": 1, "detail": {"hold": 1, "request": LATE,
                                                    "client_view": "timeout"}},
             {**ev, "f": "release", "t": 2, "detail": {
                 "hold": 1, "request": LATE, "reason": "abort marker at offset 39",
                 "delivered": True, "trigger": {"api": "EndTxn"}}},
             {**ev, "f": "answer", "t": 3, "detail": {
                 "hold": 1, "request": LATE,
                 "response": {"partitions": [["t", 0, error, 40 if not error else -1]]}}}]
    run_dir.mkdir(exist_ok=True)
    (run_dir / "nemesis.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return str(run_dir)


#: the late batch's record, read twice at read_committed (tied to the late Produce)
DUP = {"kind": "duplicate-cross-session", "partition": 0, "offset": 12, "offsets": [12, 40],
       "pid": "transactional-0"}


def _doc(scenario, verdicts, clients=("kafka-python 3.0.12",), run_dir=None, total=100.0,
         anomalies=None):
    cols = []
    for client, (rc, ru) in verdicts.items():
        mode = "transactional" if len(clients) == 1 else f"transactional/{client}"
        for iso, v in (("read_committed", rc), ("read_uncommitted", ru)):
            sample = (anomalies if anomalies is not None else [DUP]) if v == "FAIL" else []
            cols.append({"name": f"{mode}@{iso}", "mode": mode, "verdict": v, "anomalies": {
                "duplicate-cross-session": {"count": len(sample), "expectation": "forbidden",
                                            "sample": sample}}})
    return {"scenario": scenario, "clients": list(clients), "columns": cols, "run": RUN,
            "run_dir": run_dir, "phases": {"total_s": total}}


def _plans():
    return kb.plan_known_bugs(_bugs(), {"kafka-14402": load_scenario("kafka-14402")},
                              clients=["kafka-python"])


def test_grid_reproduced_everywhere_exits_0(tmp_path):
    fail = {"kafka-python": ("FAIL", "PASS")}
    ok = {"kafka-python": ("PASS", "PASS")}
    took, refused = _late_produce_run(tmp_path, 0), _late_produce_run(tmp_path, 53)
    docs = {"3.5.2": [_doc("kafka-14402", fail, run_dir=took)] * 3,
            "4.1.1": [_doc("kafka-14402", ok, run_dir=refused)] * 3 +
                     [_doc("kafka-14402-verification-off", fail, total=90, run_dir=took)] * 3}
    grid = kb.known_bug_grid(_plans(), docs)
    rows = {(r["kafka"], r["setting"]): r for r in grid["rows"]}
    assert rows[("3.5.2", "defaults")]["text"] == "FAIL 3/3"
    assert rows[("4.1.1", "defaults")]["text"] == "PASS 3/3"
    off = rows[("4.1.1", "transaction.partition.verification.enable=false")]
    assert (off["text"], off["match"], off["wall_s"]) == ("FAIL 3/3", "yes", [90.0] * 3)
    assert rows[("3.5.2", "defaults")]["client"] == "kafka-python 3.0.12"
    assert grid["exit_code"] == 0


def test_each_clusters_set_up_is_its_wall_time_less_its_runs():
    fail = {"kafka-python": ("FAIL", "PASS")}
    docs = {"3.5.2": [_doc("kafka-14402", fail, total=100)] * 3,
            "4.1.1": [_doc("kafka-14402", fail, total=80)] * 2}
    rows = kb.cluster_times(_plans(), docs, {"3.5.2": 345.0, "4.1.1": 150.0})
    assert rows == [
        {"cluster": "3.5.2", "runs": 3, "wall_s": 345.0, "runs_s": 300.0, "setup_s": 45.0},
        {"cluster": "4.1.1", "runs": 2, "wall_s": 150.0, "runs_s": 160.0, "setup_s": 0.0}]
    # a cluster that never ran (no wall time) has no row
    assert [r["cluster"] for r in kb.cluster_times(_plans(), docs, {"4.1.1": 9.0})] == ["4.1.1"]


def test_a_mismatch_either_way_exits_1_and_an_open_row_2(tmp_path):
    fail = {"kafka-python": ("FAIL", "PASS")}
    ok = {"kafka-python": ("PASS", "PASS")}
    # the read_uncommitted column is not the bug's: its FAIL does not count
    ru_only = {"kafka-python": ("PASS", "FAIL")}
    took, refused = _late_produce_run(tmp_path, 0), _late_produce_run(tmp_path, 53)
    docs = {"3.5.2": [_doc("kafka-14402", fail, run_dir=took),
                      _doc("kafka-14402", ru_only, run_dir=took)],
            "4.1.1": [_doc("kafka-14402", ok, run_dir=refused),
                      _doc("kafka-14402-verification-off", fail, run_dir=took)]}
    grid = kb.known_bug_grid(_plans(), docs)
    assert [r["match"] for r in grid["rows"]] == ["NO", "yes", "yes"]
    assert grid["rows"][0]["text"] == "FAIL 1/2 · PASS 1/2"
    assert grid["exit_code"] == 1
    docs["3.5.2"] = [_doc("kafka-14402", fail, run_dir=took)]
    docs["4.1.1"][0] = _doc("kafka-14402", {"kafka-python": ("FAIL", "PASS")}, run_dir=took)
    assert kb.known_bug_grid(_plans(), docs)["exit_code"] == 1  # FAIL on fixed
    docs["4.1.1"][0] = _doc("kafka-14402", {"kafka-python": ("UNKNOWN", "PASS")},
                            run_dir=refused)
    assert kb.known_bug_grid(_plans(), docs)["exit_code"] == 2
    del docs["3.5.2"]  # a version whose cluster never ran: its rows say not run
    grid = kb.known_bug_grid(_plans(), docs)
    assert grid["rows"][0]["text"] == "not run" and grid["exit_code"] == 2


def test_clients_side_by_side_are_judged_apart():
    bug = [b for b in _bugs() if b.id == "KAFKA-14402"][0]
    doc = _doc("kafka-14402", {"java": ("PASS", "PASS"), "kafka-python": ("FAIL", "PASS")},
               clients=("java 4.1.1", "kafka-python 3.0.12"))
    assert kb.run_outcome(doc, bug, "kafka-python") == "FAIL"
    assert kb.run_outcome(doc, bug, "java") == "PASS"
    assert kb.run_outcome(doc, bug, "librdkafka") == "UNKNOWN"


@pytest.mark.parametrize("text, fragment", [
    ('[[bug]]\nid = "X"\nscenario = "s"\ncolumns = []\n'
     '[[bug.combination]]\nkafka = "3.5.2"\nclient = "java"\nstatus = "broken"\n',
     "status must be"),
    ('[[bug]]\nid = "X"\nscenario = "s"\ncolumns = []\n'
     '[[bug.combination]]\nkafka = "3.5.2"\nclient = "java"\nstatus = "fixed"\n'
     'broker = { "a.b" = false }\n', "names its variant"),
    ('[[bug]]\nid = "X"\ncolumns = []\n', "missing ['combination', 'scenario']"),
])
def test_bad_bug_files(text, fragment):
    with pytest.raises(UsageError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        kb.parse_known_bugs(text)


def test_the_cli_plans_from_the_bugs_and_refuses_an_empty_selection():
    from verifier.api._prepare import _known_bug_runs

    scenarios = [load_scenario("kafka-14402")]
    plans, runs, versions, clients = _known_bug_runs(scenarios, [], ("kafka-python",))
    assert versions == ["3.5.2", "4.1.1", *CURRENT] and clients == ("kafka-python",)
    assert [s.name for s in runs] == ["kafka-14402", "kafka-14402",
                                      "kafka-14402-verification-off"] + ["kafka-14402"] * 3
    assert len(plans) == 5
    with pytest.raises(UsageError, match="no combination"):
        _known_bug_runs(scenarios, ["3.9.1"], ())
    # without --clients every client a combination names runs, side by side
    _, _, _, clients = _known_bug_runs(scenarios, [], ())
    assert set(clients) == {"kafka-python", "java"}


def test_a_combination_at_transaction_version_2_runs_a_schedule_of_its_own():
    """Issue 45: at transaction version 2 the Java client sends no AddPartitionsToTxn, so
    KAFKA-14402's and (b)'s schedules could release their late batch only at its bound;
    the fixed Java rows name schedules that reach the window, run with their bug."""
    bugs = {b.id: b for b in _bugs()}
    for bug_id, own in (("KAFKA-14402", "kafka-14402-tv2"),
                        ("KAFKA-17754 (b)", "kafka-17754b-tv2")):
        bug = bugs[bug_id]
        (fixed,) = [c for c in bug.combinations if c.status == "fixed" and
                    c.client.startswith("java")]
        assert bug.run_name(fixed) == own
        plans = kb.plan_known_bugs(_bugs(), {bug.scenario: load_scenario(bug.scenario)},
                                   versions=["4.1.1"], clients=["java"])
        assert own in [s.name for p in plans for s in p.scenarios]
        release_on = load_scenario(own).faults[0]["params"]["release_on"]
        assert release_on["api_key"] != 24  # not an AddPartitionsToTxn: none comes
