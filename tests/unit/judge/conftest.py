"""The checks' hand-written cases run on the definitions in plain Arrow here (no JVM);
tests/integration/judge/test_batch_pass.py runs the same cases through Spark."""

from __future__ import annotations

import pytest


@pytest.fixture
def engine():
    """What judges a :class:`~tests.unit.judge.builders.RunBuilder` run: None, the Arrow
    pass (:mod:`verifier.judge.selftest.local`)."""
    return None
