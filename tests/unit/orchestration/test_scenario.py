"""Scenario files and profiles: parsing, validation, scaling."""

from __future__ import annotations

import pytest

from verifier.orchestration.scenario import (
    MODES,
    available,
    load_profiles,
    load_scenario,
    parse_scenario,
    scaled,
)
from verifier.rundata.errors import UsageError


def test_every_shipped_scenario_parses():
    names = available()
    assert "baseline" in names
    for name in names:
        s = load_scenario(name)
        assert s.name == name and s.workload.modes


def test_profiles_name_existing_scenarios():
    profiles = load_profiles()
    assert {"quick", "full"} <= set(profiles)
    for p in profiles.values():
        for name in p.scenarios:
            load_scenario(name)
    # every scenario runs in some profile; full is baseline and every one with a fault
    # but those of the versions profile (their faults matter across broker versions) and
    # of the pipelines profile (they kill the pipelines under test: --pipeline), of the
    # known-bugs profile (each forces one bug on the combinations it is documented for)
    # and of the spark-cluster profile (executors of a standalone cluster the run starts),
    # and of the error-answers profile (not yet measured end to end: in no CI run)
    assert set().union(*(p.scenarios for p in profiles.values())) == set(available())
    apart = ("versions", "pipelines", "known-bugs", "spark-cluster", "apps", "error-answers")
    assert set(profiles["full"].scenarios) == {"baseline"} | {
        n for n in available() if load_scenario(n).faults} - set().union(
        *(profiles[p].scenarios for p in apart))
    assert profiles["versions"].kafka_versions and profiles["versions"].clients
    assert not {"error-answer-refused", "error-answer-replaced"} & (
        set(profiles["quick"].scenarios) | set(profiles["full"].scenarios))


def test_defaults_and_modes():
    s = parse_scenario("", "x")
    assert s.workload.modes == MODES and s.sink == "exactly-once" and s.faults == ()


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[workload]\nmodes = ['exactly-twice']", "unknown modes"),
        ("[workload]\nspeed = 3", "unknown keys"),
        ("bogus = 1", "unknown keys"),
        ("[options]\nsink = 'maybe'", "sink must be"),
        ("[workload]\nabort_fraction = 1.5", "abort_fraction"),
        ("[workload\n", "not valid TOML"),
        ("faults = 3", "list of tables"),
        # one environment serves every scenario of a matrix: no per-scenario node count
        ("[options]\nnodes = 1", "unknown keys"),
    ],
)
def test_bad_scenarios_are_usage_errors(text, fragment):
    with pytest.raises(UsageError, match=fragment):
        parse_scenario(text, "x")


def test_unknown_scenario_lists_available():
    with pytest.raises(UsageError, match="baseline"):
        load_scenario("no-such-scenario")


def test_scaling_touches_times_and_rates():
    s = parse_scenario(
        "[workload]\nduration_s = 20\nrate = 100\n"
        "[[faults]]\nkind = 'x'\nstart = 5\nduration = [4, 10]\n",
        "x",
    )
    from verifier.orchestration.scenario import Profile

    out = scaled(s, Profile("p", ("x",), time_scale=0.5, rate_scale=2))
    assert out.workload.duration_s == 10 and out.workload.rate == 200
    assert out.faults[0]["start"] == 2.5 and out.faults[0]["duration"] == [2, 5]
    assert s.faults[0]["start"] == 5  # the original is untouched
