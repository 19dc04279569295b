"""The public API (verifier.api): its surface, the checks of a request before anything
starts, and the frame a command runs in. No JVM: nothing here starts a cluster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import verifier.api._process as process
from verifier import api
from verifier.rundata.errors import UsageError


def test_the_surface_is_small_sorted_and_importable():
    assert api.__all__ == sorted(api.__all__, key=lambda n: (not n.isupper(), n))
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    assert all(not m.startswith("_") for m in api.__all__)


def test_prepare_checks_and_returns_what_the_run_needs(tmp_path, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    request = api.ChaosRequest(scenarios=("baseline", "ack-loss"), seed=5, repeat=2,
                               out=tmp_path / "out", state_dir=tmp_path / "state")
    prepared = api.prepare(request)
    assert [s.name for s in prepared.scenarios] == ["baseline", "ack-loss"]
    assert (prepared.opts.seed, prepared.opts.repeat, prepared.opts.out) == (
        5, 2, tmp_path / "out")
    assert prepared.env.state_dir == (tmp_path / "state").resolve()
    assert not prepared.needs_namespace and prepared.known_bug_plans == ()
    assert (tmp_path / "out").is_dir()  # checked writable, nothing else started
    for bad, said in [({"profile": "huge"}, "unknown profile"),
                      ({"spark_conf": ("x",)}, "expected KEY=VALUE"),
                      ({"keep_topics": True}, "--keep-topics goes with")]:
        with pytest.raises(UsageError, match=said):
            api.prepare(api.ChaosRequest(scenarios=("baseline",), out=tmp_path / "o", **bad))


def test_the_frame_runs_the_body_or_reexecutes_the_command_in_a_namespace(tmp_path,
                                                                         monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(process, "cleanup", lambda: [])
    reexecuted = []
    monkeypatch.setattr(process, "rerun_in_namespace", lambda argv: reexecuted.append(argv)
                        or 7)
    where = {"out": tmp_path / "out", "state_dir": tmp_path / "state"}
    seen = []
    assert api.run_prepared(api.ChaosRequest(scenarios=("baseline",), **where), ["x"],
                            lambda p: seen.append(p.scenarios[0].name) or 3) == 3
    assert seen == ["baseline"] and reexecuted == []
    partitions = api.ChaosRequest(scenarios=("network-partition",), **where)
    if os.geteuid() != 0 or api.prepare(partitions).needs_namespace is False:
        pytest.skip("network partitions need root, ip, nft and setpriv here")
    assert api.run_prepared(partitions, ["chaos", "--scenario", "network-partition"],
                            lambda p: pytest.fail("ran outside the namespace")) == 7
    assert reexecuted == [["chaos", "--scenario", "network-partition"]]


def test_a_users_producer_claims_the_preset_of_its_settings(tmp_path):
    props = Path(tmp_path / "app.properties")
    props.write_text("acks=1\n")
    assert api.read_user_producer(props).claimed == "at-least-once"
    props.write_text("enable.idempotence=true\nacks=all\n")
    user = api.read_user_producer(props, "java:3.9.1")
    assert user.claimed == "idempotent" and user.path == props
    # librdkafka's idempotence is off unless set
    props.write_text("acks=all\n")
    assert api.read_user_producer(props, "librdkafka").claimed == "at-least-once"
    assert api.read_user_producer(props, "librdkafka", claim_on="kafka-python").claimed == \
        "idempotent"
