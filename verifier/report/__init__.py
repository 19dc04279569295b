"""Reports derived from a verdict document: terminal table, verdict.json, junit.xml,
report.html, and the scenario x mode grid of several runs.

Every renderer takes the plain verdict dict (``verifier.judge.verdict.build``), so
``verifier report`` re-renders from verdict.json alone.
"""

from verifier.judge.verdict import combine
from verifier.report.files import read_verdict, write_verdict
from verifier.report.html import render_html, write_html
from verifier.report.junit import render_junit, write_junit
from verifier.report.terminal import render_grid, render_terminal

__all__ = [
    "combine",
    "read_verdict",
    "render_grid",
    "render_html",
    "render_junit",
    "render_terminal",
    "write_html",
    "write_junit",
    "write_verdict",
]
