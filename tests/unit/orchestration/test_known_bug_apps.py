"""A known bug's application column (issue 50): a combination names a Java application
preset and the Kafka release it is built against; the grid runs each application release
on a cluster of its own."""

from __future__ import annotations

import pytest

from verifier.orchestration import known_bugs as kb
from verifier.orchestration.known_bug_apps import AppSpec, parse_app_spec, planned
from verifier.orchestration.scenario import load_scenario
from verifier.rundata.errors import UsageError

BUG = '''
[[bug]]
id = "KAFKA-20685"
scenario = "kafka-20685"
columns = ["app:streams-count-eos-flush@read_committed"]

[[bug.combination]]
kafka = "4.4.0"
client = "kafka-python"
app = "streams-count-eos-flush:4.1.2"
status = "affected"

[[bug.combination]]
kafka = "4.4.0"
client = "kafka-python"
app = "streams-count-eos-flush:4.2.2"
status = "fixed"
'''


def test_an_app_spec_is_a_java_preset_and_an_optional_release():
    assert parse_app_spec("streams-count-eos-flush:4.1.2") == AppSpec(
        "streams-count-eos-flush", "4.1.2")
    assert parse_app_spec(" streams-count-eos ").version == ""
    assert AppSpec("streams-count-eos", "4.1.2").slug == "streams-count-eos-4.1.2"
    for bad in ("streams-count-eos:4.1", "no-such-app:4.1.2", "copier-commit-before",
                "streams-count-eos:4.1.2:x"):
        with pytest.raises(UsageError, match="Java application preset"):
            parse_app_spec(bad)


def test_the_grid_parses_a_combination_with_an_application_and_its_version():
    (bug,) = kb.parse_known_bugs(BUG)
    assert [(c.app, c.status) for c in bug.combinations] == [
        ("streams-count-eos-flush:4.1.2", "affected"),
        ("streams-count-eos-flush:4.2.2", "fixed")]
    with pytest.raises(UsageError, match="Java application preset"):
        kb.parse_known_bugs(BUG.replace("eos-flush:4.2.2", "eos-flush:latest"))


def test_each_application_release_runs_on_a_cluster_of_its_own():
    bugs = kb.parse_known_bugs(BUG)
    plans = kb.plan_known_bugs(bugs, {"kafka-20685": load_scenario("kafka-20685")})
    assert [(p.kafka, p.app, p.clients, len(p.cells)) for p in plans] == [
        ("4.4.0", "streams-count-eos-flush:4.1.2", ["kafka-python"], 1),
        ("4.4.0", "streams-count-eos-flush:4.2.2", ["kafka-python"], 1)]
    assert [p.key for p in plans] == ["4.4.0+app=streams-count-eos-flush-4.1.2",
                                      "4.4.0+app=streams-count-eos-flush-4.2.2"]


def test_the_application_runs_one_instance_on_the_jars_of_its_release():
    (app,) = planned(AppSpec("streams-count-eos-flush", "4.1.2"), java="java")
    assert app.instances == 1 and app.oracle == "reference"
    assert any(a.endswith("java-apps-4.1.2/*") for a in app.argv)
    assert app.argv[app.argv.index("--write-buffer-kb") + 1] == "64"


def test_the_wait_for_a_streams_group_counts_its_repartition_topic_before_any_commit():
    """A count stage that committed nothing yet is behind: its repartition topic is known by
    Streams' naming, not only from the group's commits (the reference run of 01:20 stopped
    with 12401 of 48456 rows)."""
    from verifier.orchestration.apps import repartition_topics

    group = "r1.app.streams-count-eos-flush"
    topics = {f"{group}-bucket-repartition", f"{group}-counts-changelog", "r1.idempotent",
              f"{group}.reference-bucket-repartition", f"{group}.out"}
    assert repartition_topics(topics, group) == {f"{group}-bucket-repartition"}
    assert repartition_topics(topics, f"{group}.reference") == {
        f"{group}.reference-bucket-repartition"}
