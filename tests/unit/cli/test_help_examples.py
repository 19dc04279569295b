"""Every ``--help`` (``verifier`` and each sub-command) ends with an ``examples:`` block
of at least two commands, each under a one-line ``#`` comment, and every example parses
with the CLI's own parser, abbreviations off (as the docs' commands, tests/unit/test_docs.py).
Pure: builds the parser, runs nothing."""

from __future__ import annotations

import argparse

import pytest

from tests.unit.test_docs import argv_of, parse_error
from verifier.cli import build_parser
from verifier.cli.helptext import HelpFormatter, epilog


def _helps() -> dict[str, str]:
    """``verifier [COMMAND]`` -> its --help text."""
    parser = build_parser()
    out = {"verifier": parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out[f"verifier {name}"] = sub.format_help()
    return out


def examples_in(text: str) -> list[tuple[str, str]]:
    """(comment, argv text) of each command in the help's ``examples:`` block."""
    lines = text.splitlines()
    start = lines.index("examples:")  # ValueError: no block
    found = []
    for i in range(start + 1, len(lines)):
        line = lines[i].strip()
        if not line:
            break
        if line.startswith("verifier "):
            prev = lines[i - 1].strip()
            found.append((prev[2:] if prev.startswith("# ") else "", line[len("verifier "):]))
    return found


HELPS = _helps()


def test_every_command_is_covered():
    assert {"verifier", "verifier chaos", "verifier analyze", "verifier report",
            "verifier cleanup", "verifier cluster"} <= set(HELPS)
    assert len(HELPS) >= 12


@pytest.mark.parametrize("command", sorted(HELPS))
def test_help_ends_with_examples_that_parse(command):
    text = HELPS[command]
    assert "\nexamples:\n" in text, f"`{command} --help` has no examples: block"
    found = examples_in(text)
    assert len(found) >= 2, f"`{command} --help`: {found}"
    for comment, args in found:
        assert comment, f"`{command} --help`: no comment above `verifier {args}`"
        error = parse_error(argv_of(args))
        assert error is None, f"`{command} --help`: verifier {args}\n{error}"
    if command != "verifier":  # a sub-command's examples show that sub-command
        name = command.split()[-1]
        assert all([w for w in argv_of(a) if not w.startswith("-")][0] == name
                   for _, a in found), found
    # the block is the last thing the help prints
    assert text.rstrip().splitlines()[-1].strip().startswith("verifier ")


def test_a_wrong_example_fails():
    """The check itself: a misspelled flag in an example is found and refused."""
    p = argparse.ArgumentParser(prog="x", formatter_class=HelpFormatter,
                                epilog=epilog(("verifier chaos --profle quick", "typo"),
                                              ("verifier chaos --profile quick", "fine"),
                                              before="a sentence " * 20))
    found = examples_in(p.format_help())
    assert [c for c, _ in found] == ["typo", "fine"]
    assert "unrecognized arguments: --profle" in parse_error(argv_of(found[0][1]))
    assert parse_error(argv_of(found[1][1])) is None
    # the block is printed as written, the prose before it wrapped
    assert "  # typo\n  verifier chaos --profle quick\n" in p.format_help()
    assert max(len(line) for line in p.format_help().splitlines()) < 100
