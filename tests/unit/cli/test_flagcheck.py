"""Flags mean what they say (issue 49): a written `verifier chaos` flag that the profile or
the other flags leave without effect is refused before anything starts (64, naming the
flag and why). Each refusal below was a run that went ahead with the flag ignored."""

from __future__ import annotations

import argparse
import time

import pytest

from verifier.cli import build_parser, main
from verifier.cli.flagcheck import given_flags, inert_flags
from verifier.orchestration.scenario import load_profiles


def _args(*argv: str) -> argparse.Namespace:
    args = build_parser().parse_args(list(argv))
    args.argv = list(argv)
    return args


@pytest.mark.parametrize(("argv", "said"), [
    (("--profile", "known-bugs", "--kafka-version", "4.1.1"),
     "--kafka-version 4.1.1 does not apply: the known-bugs profile runs each bug on the "
     "brokers and clients its rows name (3.5.2, 3.6.2, 4.1.1, 4.2.0, 4.2.2, 4.3.1, 4.4.0); "
     "--kafka-versions 4.1.1 keeps only the rows on that broker"),
    (("--profile", "known-bugs", "--client", "java"), "--clients java keeps only the rows"),
    (("--client", "java", "--clients", "java,kafka-python"),
     "--client does not apply with --clients"),
    (("--pipeline-guarantee", "exactly-once"), "name them with --pipeline"),
    (("--bootstrap-servers", "127.0.0.1:1", "--state-dir", "/tmp/x"),
     "--state-dir does not apply with --bootstrap-servers"),
    (("--profile", "versions", "--retry-not-exercised", "2"),
     "--retry-not-exercised does not apply to the versions profile's version grid"),
])
def test_a_flag_that_does_nothing_is_refused_before_anything_starts(argv, said, capsys):
    t0 = time.monotonic()
    assert main(["chaos", *argv, "--out", "/nonexistent/never-created"]) == 64
    err = capsys.readouterr().err
    assert said in err, err
    assert time.monotonic() - t0 < 10  # refused in the checks, no cluster, no Spark


def test_given_flags_are_what_was_written_whatever_the_value():
    # the default's own value written is still written; an abbreviation and --x=y count
    args = _args("-v", "chaos", "--client=kafka-python", "--base-port", "9700", "--sel")
    assert given_flags(args) == {"client", "base_port", "selftest"}
    assert given_flags(_args("chaos")) == set()


def test_shrink_is_never_refused_for_the_flags_it_sets_itself():
    """shrink builds its chaos run with --base-port, --state-dir and, for an external
    cluster's run, --bootstrap-servers: those are not the user's flags."""
    chaos = _args("chaos", "--bootstrap-servers", "b:9092", "--base-port", "9800")
    chaos.argv = ["shrink", "runs/x", "--base-port", "9800"]  # shrink's own command line
    assert given_flags(chaos) == set()
    profile = load_profiles()["full"]
    assert inert_flags(chaos, profile, given_flags(chaos)) == []


def test_flags_that_apply_are_not_refused():
    profiles = load_profiles()
    for argv, prof in [(("--profile", "known-bugs", "--kafka-versions", "4.1.1"), "known-bugs"),
                       (("--profile", "known-bugs", "--clients", "java"), "known-bugs"),
                       (("--kafka-version", "3.9.1"), "full"),
                       (("--pipeline", "delta", "--pipeline-guarantee", "exactly-once"), "full"),
                       (("--retry-not-exercised", "2", "--repeat", "3"), "quick")]:
        args = _args("chaos", *argv)
        assert inert_flags(args, profiles[prof], given_flags(args)) == [], argv
