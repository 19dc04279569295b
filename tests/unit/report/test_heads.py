"""A column's head breaks where it reads well, so that many application columns fit a
1280-px window (verifier.report.heads)."""

from __future__ import annotations

import re

from verifier.report.heads import column_head
from verifier.report.matrix import matrix_html


def _longest_unbroken(html: str) -> int:
    return max(len(part) for part in re.split(r"<wbr>|\s", html))


def test_a_long_application_column_head_has_no_long_unbroken_run():
    name = "app:java-copier-transactional[consumer]@read_uncommitted"
    head = column_head(name)
    assert head.replace("<wbr>", "") == name  # the text itself is unchanged
    assert _longest_unbroken(head) <= len("transactional") + 1


def test_names_are_escaped_before_the_breaks_go_in():
    assert column_head("user:<svc>&x") == "user:<wbr>&lt;svc&gt;&amp;x"


def test_the_matrix_heads_use_it():
    cols = ["idempotent", "app:java-copier-transactional[consumer]@read_committed"]
    grid = {"columns": cols, "rows": [], "exit_code": 0}
    html = matrix_html(grid, [], __import__("pathlib").Path("."))
    assert "app:<wbr>java-<wbr>copier-<wbr>transactional<wbr>[consumer]@<wbr>read_" in html
