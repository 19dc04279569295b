"""The ``examples:`` block every ``--help`` ends with (issue #36), and a formatter that
keeps it as written while still wrapping the prose around it.

tests/unit/cli/test_help_examples.py parses every example with the CLI's own parser."""

from __future__ import annotations

import argparse


class HelpFormatter(argparse.HelpFormatter):
    """Wraps one-line paragraphs (prose) to the terminal; a paragraph of several lines
    (the examples block, a list laid out by hand) is kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for para in text.split("\n\n"):
            if "\n" in para:
                out.append("\n".join(indent + line for line in para.splitlines()))
            else:
                out.append(super()._fill_text(para, width, indent))
        return "\n\n".join(out)


def examples(*pairs: tuple[str, str]) -> str:
    """``(command line, one-line comment)`` pairs as the block: the comment, then the
    command, each indented; commands start with ``verifier ``."""
    lines = ["examples:"]
    for command, comment in pairs:
        lines += [f"  # {comment}", f"  {command}"]
    return "\n".join(lines)


def epilog(*pairs: tuple[str, str], before: str = "") -> str:
    """``before`` (a one-line paragraph, wrapped) followed by the examples block."""
    return (before + "\n\n" if before else "") + examples(*pairs)


def vocabulary() -> list[str]:
    """The verdicts and exit codes as ``--help`` shows them, read from the one table
    (verifier.rundata.vocab), so the help and the doc pages cannot drift apart."""
    from verifier.rundata.vocab import EXIT_CODES, EXIT_RULE, VERDICTS

    return (["verdicts (a cell of the grid, best first):"]
            + [f"  {v.name:<14}{v.meaning}" for v in VERDICTS]
            + [f"exit codes ({EXIT_RULE}):"]
            + [f"  {code:<4}{meaning}" for code, meaning in EXIT_CODES])
