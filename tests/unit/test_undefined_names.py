"""A name used and never bound fails a run only when its line executes: a method of the
orchestrator that only a run reaches raised NameError on every run while the unit tier
passed (2026-11-29, ``UI`` imported in one method and used in another). Pyflakes' checks
of names (ruff's F821-F823, F811) find it without running anything."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["verifier", "producers", "streaming"]


def _ruff() -> str | None:
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.exists() else shutil.which("ruff")


def test_no_undefined_or_shadowed_name_in_the_product():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[dev]' installs it)")
    done = subprocess.run([ruff, "check", "--no-cache", "--select", "F821,F822,F823,F811",
                           "--output-format", "concise", *PACKAGES],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
