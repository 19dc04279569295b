"""`verifier chaos` and broker versions: --kafka-version, --kafka-versions and the
versions profile, checked before anything starts; and the version x client x mode grid."""

from __future__ import annotations

import json

import pytest

import verifier.api._process as process
from verifier import api
from verifier.assess.exitcodes import set_versions
from verifier.cli import main
from verifier.report.versions import (
    read_version_grid,
    render_version_grid,
    speaks_transaction_v2,
    transaction_version_line,
    version_grid,
    write_version_grid,
)


@pytest.fixture
def captured(monkeypatch):
    seen = {}

    def run(prepared, **_hooks):  # collect, advice: verifier.cli.advise's
        seen.update(profile=prepared.profile.name,
                    scenarios=[s.name for s in prepared.scenarios], env=prepared.env,
                    opts=prepared.opts, client=prepared.opts.client)
        return 0

    monkeypatch.setattr(api, "run_chaos", run)
    monkeypatch.setattr(process, "cleanup", lambda: [])
    monkeypatch.setattr(process, "stop_on_signals", lambda: {})
    monkeypatch.delenv("JAVA_HOME", raising=False)
    return seen


def test_the_versions_profile_brings_its_versions_and_clients(captured, tmp_path):
    assert main(["chaos", "--profile", "versions", "--out", str(tmp_path)]) == 0
    assert captured["scenarios"] == ["late-produce", "late-end-txn"]
    assert captured["opts"].kafka_versions == (
        "3.3.2", "3.5.2", "3.6.2", "4.1.1", "4.2.2", "4.3.1", "4.4.0",
        "4.4.0+transaction.version=0")
    assert captured["env"].kafka_version == "3.3.2"  # checked against the first
    assert captured["client"] == "kafka-python"


def test_kafka_versions_replace_the_profiles(captured, tmp_path):
    assert main(["chaos", "--profile", "versions", "--kafka-versions", "3.6.2, 4.1.1",
                 "--scenario", "late-produce", "--out", str(tmp_path)]) == 0
    assert captured["opts"].kafka_versions == ("3.6.2", "4.1.1")
    assert captured["scenarios"] == ["late-produce"]


def test_a_version_at_a_transaction_version_is_a_cluster_of_its_own(captured, tmp_path):
    """Issue 50: transaction.version as a broker-setting dimension of the versions grid;
    the cluster is the plain release (the level is set after its start)."""
    assert main(["chaos", "--profile", "versions", "--kafka-versions",
                 "4.4.0+transaction.version=0, 4.4.0", "--out", str(tmp_path)]) == 0
    assert captured["opts"].kafka_versions == ("4.4.0+transaction.version=0", "4.4.0")
    assert captured["env"].kafka_version == "4.4.0"


def test_one_kafka_version_is_one_ordinary_run(captured, tmp_path):
    assert main(["chaos", "--scenario", "baseline", "--kafka-version", "3.9.1",
                 "--out", str(tmp_path)]) == 0
    assert captured["opts"].kafka_versions == ()
    assert captured["env"].kafka_version == "3.9.1"


@pytest.mark.parametrize("argv, word", [
    (["--kafka-version", "3.2.0"], "3.3 to 4.x"),
    (["--kafka-versions", "3.5.2,2.8.1"], "3.3 to 4.x"),
    (["--kafka-version", "4.1.1", "--kafka-versions", "3.5.2"], "one or the other"),
    (["--kafka-versions", "3.5.2", "--bootstrap-servers", "127.0.0.1:1"], "local cluster"),
    (["--kafka-versions", "3.6.2+transaction.version=0"], "4.x brokers only"),
    (["--kafka-versions", "4.4.0+transaction.version=3"], "transaction.version=0|1|2"),
    (["--kafka-versions", "4.4.0+group.version=1"], "VERSION+FEATURE=LEVEL"),
])
def test_bad_version_flags_are_usage_errors(argv, word, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(api, "run_chaos", lambda *a: pytest.fail("the run started"))
    monkeypatch.setattr(process, "cleanup", lambda: pytest.fail("cleanup ran"))
    assert main(["chaos", "--scenario", "baseline", "--out", str(tmp_path), *argv]) == 64
    err = capsys.readouterr().err
    assert word in err and "Traceback" not in err


def _doc(scenario: str, clients: list[str], cols: list[tuple[str, str, str]], code: int) -> dict:
    """A run document as analyze writes it: columns (name, mode, verdict)."""
    return {"scenario": scenario, "clients": clients, "exit_code": code, "run_dir": None,
            "columns": [{"name": n, "mode": m, "verdict": v, "counts": {},
                         "anomalies": {}} for n, m, v in cols]}


def test_version_grid_rows_are_version_client_scenario(tmp_path):
    one_client = _doc("late-produce", ["kafka-python 3.0.12"], [
        ("transactional@read_committed", "transactional", "FAIL"),
        ("transactional@read_uncommitted", "transactional", "PASS")], 1)
    two_clients = _doc("late-produce", ["java 4.1.1", "kafka-python 3.0.12"], [
        ("transactional/java@read_committed", "transactional/java", "PASS"),
        ("transactional/kafka-python@read_committed", "transactional/kafka-python", "PASS")],
        0)
    grid = version_grid([("3.5.2", [one_client]), ("4.1.1", [two_clients])])
    assert grid["columns"] == ["transactional@read_committed", "transactional@read_uncommitted"]
    assert [(r["kafka"], r["client"], r["scenario"]) for r in grid["rows"]] == [
        ("3.5.2", "kafka-python 3.0.12", "late-produce"),
        ("4.1.1", "java 4.1.1", "late-produce"),
        ("4.1.1", "kafka-python 3.0.12", "late-produce")]
    assert grid["rows"][0]["cells"]["transactional@read_committed"]["verdict"] == "FAIL"
    assert grid["rows"][1]["cells"]["transactional@read_committed"]["verdict"] == "PASS"
    # a broken promise on any version (and one that never ran: still the broken promise)
    assert set_versions(grid, [1, 0], not_run=False) == 1 and grid["exit_code"] == 1
    assert set_versions({}, [0, 3], not_run=False) == 3
    assert set_versions({}, [2, 3], not_run=False) == 2  # 3 ranks with 2: the first stays
    assert set_versions({}, [2, 1], not_run=False) == 1
    assert set_versions({}, [0], not_run=True) == 2
    assert set_versions({}, [1], not_run=True) == 1
    text = render_version_grid(grid)
    first, second, *_ = text.splitlines()
    assert first.split()[:4] == ["kafka", "client", "scenario", "transactional@read_committed"]
    assert second.split()[:5] == ["3.5.2", "kafka-python", "3.0.12", "late-produce", "FAIL"]
    path = write_version_grid(grid, tmp_path / "versions.json", {"seed": 1})
    assert read_version_grid(path)["rows"] == json.loads(json.dumps(grid["rows"]))


def test_the_grid_names_what_the_broker_answered_to_a_late_request(tmp_path):
    from verifier.rundata.layout import RunLayout

    def answer(pid, partitions):
        return {"type": "event", "f": "answer", "fault": "hold", "id": 1, "t": 1,
                "detail": {"request": {"api": "Produce",
                                       "transactional_id": f"run.{pid}"},
                           "response": {"partitions": partitions}}}

    run = tmp_path / "run"
    nemesis = RunLayout(run).nemesis
    nemesis.parent.mkdir(parents=True)
    lines = [{"type": "header", "format": "nemesis-history", "version": 1, "run": "run"},
             answer("transactional-java-0", [["t", 0, 48, -1]]),
             answer("transactional-kafka-python-0", [["t", 0, 0, 203]]),
             answer("transactional-kafka-python-0", [["t", 0, 0, 203]])]
    nemesis.write_text("".join(json.dumps(x) + "\n" for x in lines))
    doc = _doc("late-produce", ["java 4.1.1", "kafka-python 3.0.12"], [
        ("transactional/java@read_committed", "transactional/java", "PASS"),
        ("transactional/kafka-python@read_committed", "transactional/kafka-python", "PASS")],
        0)
    doc["run_dir"] = str(run)
    grid = version_grid([("3.5.2", [doc])])
    assert {r["client"]: r["held"] for r in grid["rows"]} == {
        "java 4.1.1": "refused: InvalidTxnState",
        "kafka-python 3.0.12": "accepted at 203 (x2)"}
    assert "held request, broker answered" in render_version_grid(grid).splitlines()[0]


def test_the_grid_says_which_clients_ran_transaction_version_2():
    """Issue 50: the Java client 4.x uses transaction version 2 where the cluster runs at
    level 2; kafka-python and librdkafka never do; a 3.x cluster or one set to level 0
    runs every client at the old protocol."""
    docs = {v: [_doc("late-end-txn", ["java 4.4.0", "kafka-python 3.0.12", "librdkafka 2.16.0"],
                     [(f"transactional/{c}@read_committed", f"transactional/{c}", "PASS")
                      for c in ("java", "kafka-python", "librdkafka")], 0)]
            for v in ("3.5.2", "4.4.0", "4.4.0+transaction.version=0")}
    old_java = _doc("late-end-txn", ["java 3.9.1"],
                    [("transactional@read_committed", "transactional", "PASS")], 0)
    grid = version_grid([*docs.items(), ("4.1.1", [old_java])])
    grid["transaction_version"] = {"3.5.2": 0, "4.4.0": 2, "4.4.0+transaction.version=0": 0,
                                   "4.1.1": 2}
    assert transaction_version_line(grid) == (
        "transaction version 2 (KIP-890 part 2): "
        "java 3.9.1 on none (the client does not speak it); "
        "java 4.4.0 on 4.4.0 (not on 3.5.2 at level 0, 4.4.0+transaction.version=0 at "
        "level 0); kafka-python 3.0.12 on none (the client does not speak it); "
        "librdkafka 2.16.0 on none (the client does not speak it)")
    assert [speaks_transaction_v2(c) for c in ("java 4.0.0", "java 3.9.1", "java",
                                               "kafka-python 4.1.0", "librdkafka 2.16.0")] == [
        True, False, False, False, False]
