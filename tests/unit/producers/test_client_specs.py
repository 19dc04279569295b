"""The client version as a dimension (issue 33): ``--clients java:3.9.1,java:4.1.1``
parsed, planned as columns that name the version, started on that version's build or
environment, and told apart in the reports and the known-bugs grid. Pure: nothing is
built or installed here."""

from __future__ import annotations

from pathlib import Path

import pytest

from producers import clients as pc
from verifier.orchestration.planning import RunOptions, plan_producers
from verifier.orchestration.scenario import parse_scenario
from verifier.rundata import jvm
from verifier.rundata.errors import UsageError
from verifier.rundata.plan import RunPlan, read_plan


@pytest.mark.parametrize("text, name, version", [
    ("java", "java", None),
    (" java:3.9.1 ", "java", "3.9.1"),
    ("librdkafka:2.10.1rc1", "librdkafka", "2.10.1rc1"),
    ("librdkafka", "librdkafka", None),
    ("kafka-python", "kafka-python", None),
])
def test_a_client_spec_is_a_name_and_maybe_a_version(text, name, version):
    spec = pc.parse_client(text)
    assert (spec.name, spec.version) == (name, version)
    assert spec.text == text.strip()


@pytest.mark.parametrize("text, fragment", [
    ("jav:3.9.1", "unknown client 'jav'"),
    ("java:", "not a release number"),
    ("java:latest", "not a release number"),
    ("java:3.9", "not a release number"),
    ("librdkafka:v2", "librdkafka:<confluent-kafka version>"),
    ("kafka-python:3.0.12", "kafka-python runs the version installed"),
])
def test_bad_client_specs_say_what_is_expected(text, fragment):
    with pytest.raises(UsageError, match=fragment):
        pc.parse_client(text)


def test_the_clients_list_keeps_order_and_drops_repeats():
    assert pc.parse_clients("java:3.9.1, java:4.1.1,java:3.9.1,kafka-python") == (
        "java:3.9.1", "java:4.1.1", "kafka-python")
    with pytest.raises(UsageError, match="comma-separated"):
        pc.parse_clients(" , ")


def test_columns_name_the_version_only_where_the_name_is_ambiguous():
    pinned = jvm.clients_version()
    assert pc.column_suffix("java", ["java", "kafka-python"]) == "java"
    assert pc.column_suffix("java:3.9.1", ["java:3.9.1", "kafka-python"]) == "java:3.9.1"
    # the bare one next to another version of the same client names its pinned version
    assert pc.column_suffix("java", ["java", "java:3.9.1"]) == f"java:{pinned}"
    assert pc.client_slug("java:3.9.1") == "java-3.9.1"


def test_same_client_and_the_selection_of_the_known_bugs_rows():
    pinned = jvm.clients_version()
    assert pc.same_client("java", f"java:{pinned}")
    assert not pc.same_client("java:3.9.1", f"java:{pinned}") or pinned == "3.9.1"
    assert pc.selects(["java"], "java:3.9.1")  # a bare name keeps every version
    assert not pc.selects(["java:9.9.9"], "java:3.9.1")
    assert not pc.selects(["kafka-python"], "java")


def test_labels_are_matched_by_name_and_version():
    labels = ["java 3.9.1", f"java {jvm.clients_version()}", "kafka-python 3.0.12"]
    assert pc.label_of(labels, "java:3.9.1") == "java 3.9.1"
    assert pc.label_of(labels, "java") == f"java {jvm.clients_version()}"
    assert pc.label_of(labels, "kafka-python") == "kafka-python 3.0.12"
    assert pc.label_of(["java 3.9.1"], "java") == "java 3.9.1"  # the only java: the one
    assert pc.label_of(labels, "java:9.9.9") is None


def test_two_java_versions_side_by_side_are_planned_apart(tmp_path):
    s = parse_scenario("[workload]\nmodes = ['idempotent', 'transactional']", "x")
    opts = RunOptions(out=Path("o"), clients=("java:3.9.1", "java:4.1.1"))
    plans = plan_producers(s, "r1", opts)
    cols = {p.mode: (p.pid, p.topic, p.client, p.client_version, p.spec) for p in plans}
    assert cols["transactional/java:3.9.1"] == (
        "transactional-java-3.9.1-0", "r1.transactional.java-3.9.1", "java", "3.9.1",
        "java:3.9.1")
    assert cols["idempotent/java:4.1.1"][3:] == ("4.1.1", "java:4.1.1")
    plan = RunPlan(run="r1", scenario="x", seed=1, sink="exactly-once",
                   bootstrap_servers="127.0.0.1:1", producers={p.pid: p for p in plans})
    back = read_plan(plan.write(tmp_path / "config.json"))
    assert back.producer("transactional-java-3.9.1-0").spec == "java:3.9.1"
    # a bare client's plan says nothing more than before
    one = plan_producers(s, "r1", RunOptions(out=Path("o"), client="java"))
    assert one[0].spec == "java" and "client_spec" not in one[0].to_json()


def test_each_version_starts_its_own_build_or_environment():
    java = pc.generator_argv("java:3.9.1", Path("R/config.json"), "p")
    assert java[java.index("-cp") + 1] == str(jvm.jars_root() / "java-generator-3.9.1" / "*")
    bare = pc.generator_argv("java", Path("R/config.json"), "p")
    assert bare[bare.index("-cp") + 1].endswith(f"java-generator-{jvm.clients_version()}/*")
    rd = pc.generator_argv("librdkafka:2.0.2", Path("R/config.json"), "p")
    assert rd[0].endswith("confluent-kafka-2.0.2/bin/python")
    assert rd[-6:] == ["-m", "producers.rdkafka", "--plan", "R/config.json", "--pid", "p"]


def test_reports_tell_two_versions_of_a_client_apart():
    from verifier.orchestration import known_bugs as kb
    from verifier.report.versions import _client_of, _column_key

    (bug,) = [b for b in kb.load_known_bugs() if b.id == "KAFKA-17754"]
    cols = [{"name": f"transactional/java:{v}@read_committed",
             "mode": f"transactional/java:{v}", "verdict": verdict}
            for v, verdict in (("3.9.1", "FAIL"), ("4.1.1", "PASS"))]
    doc = {"scenario": "kafka-17754", "clients": ["java 3.9.1", "java 4.1.1"],
           "columns": cols, "run_dir": None}
    assert _client_of(doc, cols[0]) == ("java 3.9.1", "transactional@read_committed")
    assert _column_key(cols[0]) == "java-3.9.1"
    assert kb.run_outcome(doc, bug, "java:3.9.1") == "FAIL"
    assert kb.run_outcome(doc, bug, "java:4.1.1") == "PASS"


def test_the_cli_takes_a_version_in_client_and_clients(monkeypatch, tmp_path, capsys):
    import verifier.api._process as process
    from verifier import api
    from verifier.cli import main

    seen = {}
    monkeypatch.setattr(api, "run_chaos",
                        lambda prepared, **_: seen.update(opts=prepared.opts) or 0)
    monkeypatch.setattr(process, "cleanup", lambda: [])
    monkeypatch.setattr(process, "stop_on_signals", lambda: {})
    # nothing is built here: what the flags ask for is what would be built
    built = []
    monkeypatch.setattr("producers.clients.require_built", built.append)
    assert main(["chaos", "--scenario", "baseline", "--out", str(tmp_path),
                 "--clients", "java:3.9.1,java:4.1.1,java:3.9.1"]) == 0
    assert seen["opts"].clients == ("java:3.9.1", "java:4.1.1") and built == list(
        seen["opts"].clients)
    built.clear()
    assert main(["chaos", "--scenario", "baseline", "--out", str(tmp_path),
                 "--client", "java:3.9.1"]) == 0
    assert seen["opts"].client == "java:3.9.1" and built == ["java:3.9.1"]
    with pytest.raises(SystemExit):
        main(["chaos", "--scenario", "baseline", "--client", "java:x"])
    assert "not a release number" in capsys.readouterr().err


def test_setup_builds_the_client_versions_it_is_given(monkeypatch, capsys):
    from verifier.cli import main
    from verifier.rundata import jvm as jvm_mod

    built = []
    monkeypatch.setattr("producers.clients.require_built", built.append)
    monkeypatch.setattr(jvm_mod, "require_java", lambda: None)
    monkeypatch.setattr(jvm_mod, "resolve", lambda s: s.folder)  # nothing downloaded here
    assert main(["setup", "--no-spark", "--no-tools", "--no-java-generator", "--no-java-apps",
                 "--clients", "java:3.9.1,librdkafka:2.0.2"]) == 0
    assert built == ["java:3.9.1", "librdkafka:2.0.2"]
    assert "librdkafka:2.0.2 ready" in capsys.readouterr().out
