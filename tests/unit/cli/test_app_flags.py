"""``--app`` (issue 47): what it names is checked before anything starts (64, naming the
flag and what to write instead), never run half-understood."""

from __future__ import annotations

import time

import pytest

from tests.unit.cli.test_flagcheck import _args
from verifier.cli import main
from verifier.cli.flagcheck import app_problems, given_flags, inert_flags
from verifier.orchestration.scenario import load_profiles

FULL = load_profiles()["full"]


def problems(*argv: str, which=lambda name: f"/usr/bin/{name}") -> list[str]:
    args = _args("chaos", *argv)
    return app_problems(args, FULL, given_flags(args), which)


def test_presets_need_nothing_else():
    assert problems("--app", "copier-commit-before,copier-transactional") == []
    assert problems("--app", "copier-commit-after", "--app-instances", "3") == []


def test_a_command_needs_its_claim_and_its_program():
    assert problems("--app", "my-svc --fast", "--app-guarantee", "exactly-once") == []
    said = problems("--app", "my-svc --fast")
    assert len(said) == 1 and "needs --app-guarantee" in said[0]
    said = problems("--app", "my-svc", "--app-guarantee", "at-least-once",
                    which=lambda name: None)
    assert said == ["--app 'my-svc': 'my-svc' is neither a preset (copier-commit-before, "
                    "copier-commit-after, copier-transactional, java-copier-commit-before, "
                    "java-copier-commit-after, java-copier-transactional, "
                    "streams-at-least-once (streams-alo), streams-exactly-once-v2 "
                    "(streams-eos), streams-count-at-least-once (streams-count-alo), "
                    "streams-count-exactly-once-v2 (streams-count-eos), "
                    "streams-count-exactly-once-v2-flushing (streams-count-eos-flush), "
                    "java-share-copier) "
                    "nor a program on PATH"]
    said = problems("--app", "copier-commit-befor", "--app-guarantee", "at-least-once",
                    which=lambda name: None)
    assert "did you mean copier-commit-before?" in said[0]


def test_a_preset_named_by_both_its_names_is_refused_not_run_twice():
    # issue 47's done-when names the Streams presets by their short names
    assert problems("--app", "streams-eos,streams-alo,copier-commit-before") == []
    assert problems("--app", "streams-eos,streams-exactly-once-v2") == [
        "--app 'streams-eos,streams-exactly-once-v2' names streams-exactly-once-v2 twice (a "
        "preset's two names are one application): name each once"]


def test_flags_about_applications_without_one_are_refused():
    assert problems("--app-guarantee", "exactly-once") == [
        "--app-guarantee does not apply: it is about the applications under test; name "
        "them with --app"]
    assert "--app-instances does not apply" in problems("--app-instances", "2")[0]


def test_a_presets_claim_is_its_own():
    said = problems("--app", "copier-transactional", "--app-guarantee", "at-least-once")
    assert said == ["--app-guarantee does not apply to the presets (copier-transactional): "
                    "each claims its own (copier-transactional: exactly-once)"]
    assert "at least 1 instance" in problems("--app", "copier-commit-after",
                                             "--app-instances", "0")[0]


def test_they_are_among_the_flags_checked_before_a_run():
    args = _args("chaos", "--app-instances", "2")
    assert any(p.startswith("--app-instances does not apply")
               for p in inert_flags(args, FULL, given_flags(args)))


@pytest.mark.parametrize(("argv", "said"), [
    (("--app", "no-such-program-here-47"), "nor a program on PATH"),
    (("--app-guarantee", "at-least-once"), "name them with --app"),
    (("--app-oracle", "reference"), "--app-oracle does not apply: it is about"),
    (("--app", "streams-count-eos", "--app-oracle", "identity"),
     "--app-oracle does not apply to the presets"),
    (("--profile", "known-bugs", "--app", "copier-commit-after"),
     "--app does not apply: the known-bugs profile"),
])
def test_the_command_line_refuses_them_before_anything_starts(argv, said, capsys):
    t0 = time.monotonic()
    assert main(["chaos", *argv, "--out", "/nonexistent/never-created"]) == 64
    assert said in capsys.readouterr().err
    assert time.monotonic() - t0 < 10


def test_group_protocols_are_checked_against_the_clients_and_the_broker(monkeypatch):
    java = "java-copier-transactional,java-share-copier"
    monkeypatch.setenv("KAFKA_CLIENTS_VERSION", "4.4.0")
    assert problems("--app", java, "--group-protocol", "classic,consumer",
                    "--kafka-version", "4.4.0") == []
    said = problems("--app", "copier-transactional", "--group-protocol", "consumer",
                    "--kafka-version", "4.4.0")
    assert len(said) == 1 and "kafka-python 3.0.12 has no group.protocol" in said[0]
    said = problems("--app", java, "--kafka-version", "4.1.1")
    assert len(said) == 1 and "java-share-copier runs in a share group" in said[0]
    assert "--group-protocol does not apply" in problems("--group-protocol", "consumer")[0]
    assert "neither" in problems("--app", java, "--group-protocol", "eager",
                                 "--kafka-version", "4.4.0")[0]
    # --kafka-version moves the broker, not the Java presets' kafka-clients
    monkeypatch.setenv("KAFKA_CLIENTS_VERSION", "4.1.1")
    said = problems("--app", java, "--kafka-version", "4.4.0")
    assert len(said) == 1 and "needs kafka-clients 4.2 or later" in said[0]


def test_a_commands_oracle_is_chosen_a_presets_is_its_own():
    """``--app-oracle`` (default identity) reaches the planned application, config.json
    and `verifier shrink`'s re-run; with a preset it is refused (each has its own)."""
    from verifier.api._shrink import _app_fields
    from verifier.rundata import apps as A

    command = ("--app", "my-svc --count", "--app-guarantee", "at-least-once")
    assert problems(*command, "--app-oracle", "reference") == []
    assert problems("--app", "copier-commit-after,streams-count-alo", "--app-oracle",
                    "reference") == [
        "--app-oracle does not apply to the presets (copier-commit-after,streams-count-alo): "
        "each is judged by its own oracle (copier-commit-after: identity, streams-count-alo: "
        "reference); it is for your own command"]
    assert problems("--app-oracle", "identity") == [
        "--app-oracle does not apply: it is about the applications under test; name them "
        "with --app"]
    [app] = A.plan_apps("my-svc --count", "at-least-once", 2, oracle="reference")
    assert app.oracle == "reference" and app.preset is None
    assert A.plan_apps("my-svc", "at-least-once", 2)[0].oracle == "identity"
    assert A.plan_apps("streams-count-alo", None, 2, oracle="identity")[0].oracle == \
        "reference"
    entry = A.config_entry(app, "r1", ["r1.t"])
    assert entry["oracle"] == "reference"
    again = _app_fields({"user": entry})
    assert again == {"app": "my-svc --count", "app_guarantee": "at-least-once",
                     "app_oracle": "reference"}
    from verifier.api import ChaosRequest
    argv = ChaosRequest(scenarios=("instance-kill",), **again).argv()
    assert argv[argv.index("--app-oracle") + 1] == "reference"
    plain = A.config_entry(A.plan_apps("my-svc", "at-least-once", 2)[0], "r1", ["r1.t"])
    assert "app_oracle" not in _app_fields({"user": plain})  # the default, not written
