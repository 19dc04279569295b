"""A column's name as a table head: breakable where it reads well, so that seven
application columns (``app:java-copier-transactional[consumer]@read_committed``) fit a
1280-px window instead of running off its right edge (seen 2026-11-29)."""

from __future__ import annotations

from html import escape

#: a line may break after these (``@`` before the isolation, ``_`` inside it, ``:``
#: after ``app``/``user``, ``-`` inside a preset's name) and before ``[`` (the protocol)
_AFTER = ("@", ":", "-", "_")


def column_head(name: str) -> str:
    """``name`` escaped, with ``<wbr>`` where a line may break."""
    out = escape(name).replace("[", "<wbr>[")
    for mark in _AFTER:
        out = out.replace(mark, mark + "<wbr>")
    return out
