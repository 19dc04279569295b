"""Moved: the per-partition definitions live in :mod:`verifier.judge.definitions.kinds`
(imported by the batch checks here and by the live checks). Kept for old imports."""

from verifier.judge.definitions.kinds import NOT_COMMITTED, OUT_DDL, OUT_SCHEMA, run_pass

__all__ = ["NOT_COMMITTED", "OUT_DDL", "OUT_SCHEMA", "run_pass"]
