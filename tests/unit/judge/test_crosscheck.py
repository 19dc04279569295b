"""Live against batch: which rows the comparison sets aside. The comparison itself, on
rows judged both ways (the batch side through Spark), is in the integration tier
(tests/integration/judge/test_crosscheck.py)."""

from __future__ import annotations
