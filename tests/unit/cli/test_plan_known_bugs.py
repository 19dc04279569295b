"""`verifier chaos --profile known-bugs --plan` plans the grid as it runs (issue 50): a
cluster per version plan, on it only that plan's scenarios with its clients side by side,
each ``--repeat`` times; before, the plan multiplied every scenario by every client and
every version (1008 runs for 126). Pure: the plan's text from the parsed profile and bugs
through ``cmd_plan``, as the command line prints it; nothing starts."""

from __future__ import annotations

import argparse
import io
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from verifier.cli.plan import cmd_plan
from verifier.harness.environment import LocalEnvironment
from verifier.orchestration import known_bugs as kb
from verifier.orchestration.planning import RunOptions
from verifier.orchestration.scenario import load_profiles, load_scenario


def _print_plan(tmp_path: Path, plans, repeat: int) -> list[str]:
    """What `verifier chaos --profile known-bugs --plan` prints for ``plans``: the
    prepared run as ``verifier.api.prepare`` makes it for the known-bugs profile (every
    plan's scenarios, the plans' versions, every client they name)."""
    clients = tuple(dict.fromkeys(c for p in plans for c in p.clients))
    opts = RunOptions(out=tmp_path, seed=1, repeat=repeat, client=clients[0],
                      clients=clients if len(clients) > 1 else (),
                      kafka_versions=tuple(p.kafka for p in plans))
    prepared = SimpleNamespace(
        scenarios=[s for p in plans for s in p.scenarios], opts=opts,
        env=LocalEnvironment(tmp_path / "state"), known_bug_plans=tuple(plans),
        needs_namespace=False)
    out = io.StringIO()
    assert cmd_plan(argparse.Namespace(bootstrap_servers=None), lambda: prepared, out) == 0
    return out.getvalue().splitlines()


def _grid():
    profile = load_profiles()["known-bugs"]
    return kb.plan_known_bugs(kb.load_known_bugs(),
                              {n: load_scenario(n) for n in profile.scenarios})


def test_the_run_count_is_each_plans_scenarios_times_repeat_summed(tmp_path):
    plans = _grid()
    lines = _print_plan(tmp_path, plans, repeat=3)
    runs = sum(len(p.scenarios) for p in plans) * 3
    load = sum(s.workload.duration_s for p in plans for s in p.scenarios) * 3
    (duration,) = [ln for ln in lines if ln.startswith("expected duration")]
    # the known-bugs model (verifier.cli.plan_parts, measured on the grid's 132 runs):
    # each run's load plus 26 s, 5 s a producer (a client a mode) and 20 s with an
    # application, and a cluster's start (30 s) per plan
    over = sum(26 + 5 * len(p.clients) * len(s.workload.modes) + (20 if p.app else 0)
               for p in plans for s in p.scenarios) * 3
    minutes = round((load + over + len(plans) * 30) / 60)
    assert f"about {minutes} min ({runs} runs on {len(plans)} clusters, {load:.0f} s " \
           "of load" in duration, duration
    headers = [ln for ln in lines if ln.startswith("cluster ")]
    assert len(headers) == len(plans)
    for header, plan in zip(headers, plans, strict=True):
        assert f": Kafka {plan.kafka}" in header and \
            f"x3 = {len(plan.scenarios) * 3} runs, {len(plan.cells)} row" in header
        assert all(f"={v} (feature level)" in header for _, v in plan.features)
    # each scenario of a cluster once, its repetitions as one run-id pattern
    text = "\n".join(lines)
    assert "rep1of3" not in text and "-rep<i>of3-s<i>" in text
    assert len(lines) < 4 * sum(len(p.scenarios) for p in plans) + 40


def test_a_combinations_own_client_only_runs_on_its_cluster(tmp_path):
    """KAFKA-19446's 4.2.0 row (the Java client 4.1.1): that cluster runs one scenario with
    one client, three times, and names its columns as a single client's."""
    plans = [p for p in _grid() if p.kafka == "4.2.0"]
    lines = _print_plan(tmp_path, plans, repeat=3)
    (header,) = [ln for ln in lines if ln.startswith("cluster ")]
    assert header.endswith("clients java:4.1.1; 1 scenario x3 = 3 runs, 1 row")
    assert "  kafka-19446 x3, 24 s of load each, run ids verifier-kafka-19446-<start>-rep<i>" \
           "of3-s<i>: KAFKA-19446: java:4.1.1 fixed" in lines
    assert "    topic <run id>.transactional  (3 partitions, replication 3); transactional " \
           "id <run id>.transactional-0" in lines
    assert any("(3 runs, 72 s of load" in ln for ln in lines)


@pytest.mark.parametrize("seed, pattern", [(1, "-s<i>"), (5, "-s<i+4>"), (0, "-s<i-1>")])
def test_the_run_id_pattern_names_each_runs_seed(seed, pattern):
    from verifier.cli.plan_known_bugs import run_ids

    opts = RunOptions(out=Path("."), seed=seed, repeat=3)
    assert run_ids("kafka-15449", opts) == f"verifier-kafka-15449-<start>-rep<i>of3{pattern}"
    assert run_ids("kafka-15449", RunOptions(out=Path("."), seed=seed)) == \
        f"verifier-kafka-15449-<start>-s{seed}"
    assert re.fullmatch(r"verifier-kafka-15449-<start>-s\d+", run_ids(
        "kafka-15449", RunOptions(out=Path("."), seed=seed)))


def test_the_kafka_20685_plan_runs_each_application_release_once_and_names_it(tmp_path):
    """`--profile known-bugs --scenario kafka-20685 --plan`: two runs (one per release of
    the application its rows name), each cluster's header naming the application and the
    release it is built against, and the names the application creates and uses."""
    plans = kb.plan_known_bugs(kb.load_known_bugs(),
                               {"kafka-20685": load_scenario("kafka-20685")})
    lines = _print_plan(tmp_path, plans, repeat=1)
    (duration,) = [ln for ln in lines if ln.startswith("expected duration")]
    assert "(2 runs on 2 clusters, 120 s of load" in duration
    headers = [ln for ln in lines if ln.startswith("cluster ")]
    assert [h.split(";")[0].split(", not built")[0] for h in headers] == [
        f"cluster {i} of 2: Kafka 4.4.0, application streams-count-eos-flush (1 instance) on "
        f"kafka-clients and kafka-streams {v}" for i, v in ((1, "4.1.2"), (2, "4.2.2"))]
    app = "<run id>.app.streams-count-eos-flush"
    for name in (f"    topic {app}.out  ", f"    topics {app}-*  ",
                 f"    transactional ids {app}-*  ", f"    group {app}  ",
                 f"    group {app}.reference  "):
        assert sum(ln.startswith(name) for ln in lines) == 2, name
    assert [ln.split(": ", 1)[1] for ln in lines if ln.startswith("  kafka-20685, 60 s")] == [
        "KAFKA-20685: kafka-python affected", "KAFKA-20685: kafka-python fixed"]


def test_the_checks_build_nothing_and_the_grid_builds_each_release_once(tmp_path,
                                                                       monkeypatch):
    """`--plan` runs the run's checks (``api.prepare``), which once built each application
    release with Maven; the grid builds them when it starts, before its first cluster,
    each once (the Maven build itself replaced by a record of the call)."""
    from verifier import api
    from verifier.orchestration import known_bug_apps
    from verifier.rundata import jvm

    built: list[str] = []
    monkeypatch.setattr(jvm, "build_project", lambda project, jars: built.append(
        jars.folder.name))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    prepared = api.prepare(api.ChaosRequest(
        profile="known-bugs", scenarios=("kafka-20685",), out=tmp_path / "out",
        state_dir=tmp_path / "state"))
    assert built == [] and [p.app for p in prepared.known_bug_plans] == [
        "streams-count-eos-flush:4.1.2", "streams-count-eos-flush:4.2.2"]
    known_bug_apps.build(list(prepared.known_bug_plans) * 2)
    assert built == ["java-apps-4.1.2", "java-apps-4.2.2"]
