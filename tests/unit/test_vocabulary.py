"""One vocabulary (issue 49): the verdicts and exit codes are one table in the code
(``verifier.rundata.vocab``); `verifier chaos --help` prints it, and every doc page that
lists them holds the same table, verbatim. A page whose table drifts (a verdict renamed,
a meaning edited, an exit code missing) fails here with the table to paste.

The pages that must hold both tables are the ones a user reads for them: the README,
docs/ci.md, docs/scenarios.md, docs/expectations.md and docs/glossary.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from verifier.cli import build_parser
from verifier.rundata.vocab import EXIT_CODES, VERDICTS

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MUST_HOLD = ["README.md", "docs/ci.md", "docs/scenarios.md", "docs/expectations.md",
             "docs/glossary.md"]

_ROW = re.compile(r"^\|(.*)\|\s*$")
#: "exit 3", "exit code 3", "exits 3", "exit codes 0/1" in prose: the numbers named
_EXIT_PROSE = re.compile(r"\bexit(?:s| code| codes)?:? \**(\d+)\b")


def verdict_table() -> list[tuple[str, str]]:
    return [(v.name, v.meaning) for v in VERDICTS]


def exit_table() -> list[tuple[str, str]]:
    return [(str(code), meaning) for code, meaning in EXIT_CODES]


def markdown(header: str, rows: list[tuple[str, str]]) -> str:
    """The table as a page must hold it (printed when a page drifts)."""
    return "\n".join([f"| {header} | meaning |", "|---|---|",
                      *(f"| {a} | {b} |" for a, b in rows)])


def tables(text: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """Every two-column table whose header is ``verdict | meaning`` or ``code | meaning``
    (``exit | meaning`` too): (header, rows)."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _ROW.match(line.strip())
        if not m:
            continue
        cells = [c.strip() for c in m.group(1).split("|")]
        if len(cells) != 2 or cells[1] != "meaning" or cells[0] not in ("verdict", "code",
                                                                          "exit"):
            continue
        if i > 0 and _ROW.match(lines[i - 1].strip()):
            continue  # not a header: a row of a longer table
        rows = []
        for row in lines[i + 2:]:
            r = _ROW.match(row.strip())
            if not r:
                break
            rows.append(tuple(c.strip() for c in r.group(1).split("|", 1)))
        out.append(("verdict" if cells[0] == "verdict" else "code", rows))
    return out


def drift(page: Path) -> list[str]:
    """What on ``page`` disagrees with the code's table (empty: nothing)."""
    want = {"verdict": verdict_table(), "code": exit_table()}
    text = page.read_text(encoding="utf-8")
    found = tables(text)
    rel = page.relative_to(ROOT).as_posix()
    problems = [f"{rel}: its {kind} table differs from verifier.rundata.vocab; it must read:"
                f"\n{markdown(kind, want[kind])}"
                for kind, rows in found if rows != want[kind]]
    if rel in MUST_HOLD:
        problems += [f"{rel} has no {kind} table; it must hold:\n{markdown(kind, want[kind])}"
                     for kind in want if kind not in {k for k, _ in found}]
    codes = {c for c, _ in want["code"]}
    problems += [f"{rel}: names exit {n}, which is not an exit code ({', '.join(codes)})"
                 for n in _EXIT_PROSE.findall(text) if n not in codes]
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_page_names_the_codes_verdicts_and_exit_codes(page):
    assert not drift(page), "\n\n".join(drift(page))


def test_the_pages_that_must_hold_the_tables_exist():
    for rel in MUST_HOLD:
        assert (ROOT / rel).exists(), rel


def test_chaos_help_prints_the_table():
    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices
               and "chaos" in a.choices)
    text = " ".join(sub.choices["chaos"].format_help().split())
    for name, meaning in verdict_table() + exit_table():
        assert f"{name} {meaning}" in text, name


def test_a_drifting_page_is_caught(tmp_path, monkeypatch):
    """The check itself: a meaning edited, a code left out, an exit code that does not
    exist in prose."""
    import tests.unit.test_vocabulary as me

    page = tmp_path / "docs" / "ci.md"
    page.parent.mkdir()
    good = markdown("verdict", verdict_table()) + "\n\n" + markdown("code", exit_table())
    monkeypatch.setattr(me, "ROOT", tmp_path)
    page.write_text(good + "\n")
    assert drift(page) == []
    page.write_text(good.replace("| 3 |", "| 4 |") + "\n")
    assert any("code table differs" in p for p in drift(page))
    page.write_text(good.replace("UNKNOWN |", "INCONCLUSIVE |") + "\nthe run exits 5\n")
    said = drift(page)
    assert any("verdict table differs" in p for p in said)
    assert any("names exit 5" in p for p in said)
    page.write_text(markdown("verdict", verdict_table()) + "\n")
    assert any("has no code table" in p for p in drift(page))
