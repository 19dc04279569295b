"""A column judged against the guarantee a user demands, not the one its settings claim.

A run judges each column by the preset its settings claim (``expect``: an at-least-once
configuration is held to at-least-once, which tolerates duplicates). A user who needs
more states it (the pytest plugin's ``expect=``): the same anomalies, counted by the same
checks, are then held to that preset's row of the expectation table. Pure: a column of
``verdict.json`` in, the column's verdict under the demanded preset out.
"""

from __future__ import annotations

from verifier.judge import expectations as X
from verifier.judge.verdict import FAIL, PASS


def judge_as(column: dict, demanded: str, sink: str = "exactly-once") -> dict:
    """``column`` (one entry of verdict.json's ``columns``) judged as ``demanded``.

    Returns ``{"verdict", "demanded", "claimed", "forbidden", "anomalies"}``: every
    anomaly kind with its count, its entry under ``demanded`` and its sample. FAIL when a
    present anomaly is forbidden for ``demanded`` at one of the column's isolation levels;
    otherwise the run's own verdict where it could not establish one (UNKNOWN, SKIPPED),
    else PASS.
    """
    if demanded not in X.PRESETS:
        raise ValueError(f"unknown guarantee {demanded!r}; one of {list(X.PRESETS)}")
    isolations = column.get("isolations") or ["read_committed", "read_uncommitted"]
    anomalies, forbidden = {}, []
    for kind, a in column.get("anomalies", {}).items():
        entry = X.strictest([X.expectation(demanded, iso, kind, sink) for iso in isolations])
        anomalies[kind] = {"count": a.get("count", 0), "expectation": entry,
                           "sample": a.get("sample", [])}
        if a.get("count") and entry == X.FORBIDDEN:
            forbidden.append(kind)
    own = column.get("verdict")
    verdict = FAIL if forbidden else own if own not in (PASS, FAIL) else PASS
    return {"verdict": verdict, "demanded": demanded, "claimed": column.get("expect"),
            "forbidden": forbidden, "anomalies": anomalies}
