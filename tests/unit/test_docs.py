"""The README and docs/ against the code: every `verifier ...` command shown in a code
block parses with the CLI's own argparse (a flag renamed in code fails here), the README
stays a front door (a line budget), and every relative link points at a file that exists.

Pure and fast: the parser is built from verifier.cli without running anything."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from verifier.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_BUDGET = 250

#: a command line in a code block: optional prompt or venv path, then `verifier `
_COMMAND = re.compile(r"^\s*(?:\$\s+)?(?:\.venv/bin/)?verifier\s+(?P<args>\S.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def commands(text: str) -> list[tuple[int, str]]:
    """(line number, argv text) of every `verifier` command in a fenced or indented code
    block; a trailing `\\` joins the next line, a `#` comment is dropped."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    fenced = False
    prev_blank = True
    indented = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            fenced = not fenced
            i += 1
            continue
        indented = line.startswith("    ") and (prev_blank or indented) and not fenced
        prev_blank = not line.strip()
        m = _COMMAND.match(line) if (fenced or indented) else None
        if m is None:
            i += 1
            continue
        start, args = i + 1, m.group("args")
        while args.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            args = args.rstrip()[:-1] + " " + lines[i].strip()
        out.append((start, args))
        i += 1
    return out


def argv_of(args: str) -> list[str]:
    """shlex, without the trailing comment; `<placeholders>` are kept as words."""
    return shlex.split(args, comments=True)


def _strict(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """No abbreviated flags, here and in every sub-command: a flag renamed from
    ``--duration`` to ``--duration-s`` must fail a page that still says ``--duration``."""
    parser.allow_abbrev = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _strict(sub)
    return parser


def parse_error(argv: list[str]) -> str | None:
    """None when the CLI's parser accepts ``argv``, else what it printed."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            _strict(build_parser()).parse_args(argv)
    except SystemExit as exc:
        return err.getvalue().strip() or f"exit {exc.code}"
    return None


def _all_commands() -> list[tuple[str, int, str]]:
    return [(p.relative_to(ROOT).as_posix(), n, a)
            for p in PAGES for n, a in commands(p.read_text(encoding="utf-8"))]  # fmt: skip


def test_the_docs_show_commands():
    found = _all_commands()
    assert len(found) >= 40, found  # the extractor still finds them
    assert any(page == "README.md" for page, _, _ in found)


@pytest.mark.parametrize(("page", "line", "args"), _all_commands(),
                         ids=lambda x: x if isinstance(x, str) and x.endswith(".md") else None)
def test_every_command_shown_parses(page, line, args):
    assert parse_error(argv_of(args)) is None, f"{page}:{line}: verifier {args}"


def test_a_renamed_flag_fails():
    """The check itself: a flag the CLI does not have is refused, a real one accepted."""
    doc = "```sh\nverifier chaos --profile quick --no-such-flag 3   # wrong\n```\n"
    [(line, args)] = commands(doc)
    assert line == 2
    assert "unrecognized arguments: --no-such-flag" in parse_error(argv_of(args))
    assert parse_error(argv_of("chaos --profile quick")) is None
    # an abbreviation of a real flag is refused too (argparse would accept it)
    assert parse_error(argv_of("chaos --prof quick")) is not None
    # indented blocks and continued lines are read too
    doc = "text\n\n    .venv/bin/verifier selftest RUN \\\n        --seed 1\n"
    assert commands(doc) == [(3, "selftest RUN  --seed 1")]


def test_readme_is_a_front_door():
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= README_BUDGET, f"README.md has {n} lines (budget {README_BUDGET}): move to docs/"


_LINK = re.compile(r"\[[^\]]*\]\((?P<to>[^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    broken = []
    for m in _LINK.finditer(page.read_text(encoding="utf-8")):
        to = m.group("to").split("#", 1)[0]
        if not to or re.match(r"^[a-z]+:", to):
            continue
        if not (page.parent / to).exists():
            broken.append(m.group("to"))
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_no_page_names_the_development_checkout():
    for page in PAGES:
        assert "../shared/" not in page.read_text(encoding="utf-8"), page
