"""The broker release a command runs when none is named is the tool's own default
(``verifier.rundata.jvm.DEFAULT_KAFKA_VERSION``, or $KAFKA_VERSION), and every ``--help``
that has ``--kafka-version`` says that one (issue 50 moved it to 4.4.0; explore's help
still said 4.1.1). Pure: builds the parser, runs nothing."""

from __future__ import annotations

import argparse

from verifier.cli import build_parser
from verifier.rundata import jvm


def _kafka_version_helps() -> dict[str, str]:
    out = {}
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for a in sub._actions:
                    if "--kafka-version" in a.option_strings:
                        out[name] = a.help
    return out


def test_every_kafka_version_help_names_the_tools_default(monkeypatch):
    helps = _kafka_version_helps()
    assert {"chaos", "explore"} <= set(helps)
    for name, text in helps.items():
        assert f"$KAFKA_VERSION or {jvm.DEFAULT_KAFKA_VERSION}" in text, (name, text)
    # read from the constant, not written twice
    monkeypatch.setattr(jvm, "DEFAULT_KAFKA_VERSION", "9.8.7")
    for name, text in _kafka_version_helps().items():
        assert "$KAFKA_VERSION or 9.8.7" in text, (name, text)


def test_explore_runs_the_tools_default_release(tmp_path, monkeypatch):
    from verifier import api

    monkeypatch.delenv("KAFKA_VERSION", raising=False)
    job, request = api.plan_explore(tmp_path / "out")
    assert job.kafka_version == request.kafka_version == jvm.DEFAULT_KAFKA_VERSION
    monkeypatch.setenv("KAFKA_VERSION", "3.6.2")
    job, _ = api.plan_explore(tmp_path / "out2")
    assert job.kafka_version == "3.6.2"
