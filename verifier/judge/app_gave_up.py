"""The calls an application's instances gave up waiting for, as the run's verdict says
them (pure; issue 47).

An instance's state file keeps the errors that made it start over (``errors``); an entry
with ``call`` and ``waited_s`` is a call it gave up after a limit (the kafka-python
transactional copier's ``send_offsets_to_transaction`` or ``commit_transaction`` after
``max_block_ms``: producers.app_txn_wait). A hang bounded this way is still something a
reader of the verdict must see: the columns are judged on what was written, and this
note (verdict.json ``notes``) says which commits were given up, where and after how long.
"""

from __future__ import annotations

import time


def gave_up(states: dict[int, dict]) -> list[dict]:
    """Every call given up by an instance: ``{instance, call, waited_s, t}``, in time
    order. ``states``: instance -> its state file's document."""
    out = []
    for instance, doc in sorted(states.items()):
        for e in (doc or {}).get("errors") or ():
            if isinstance(e, dict) and e.get("call") and e.get("waited_s") is not None:
                out.append({"instance": instance, "call": str(e["call"]),
                            "waited_s": float(e["waited_s"]), "t": e.get("t")})
    return sorted(out, key=lambda g: (float(g["t"] or 0), g["instance"]))


def note(app: str, items: list[dict]) -> str | None:
    """The verdict's note on one application's given-up calls (None without any)."""
    if not items:
        return None

    def one(g: dict) -> str:
        at = (time.strftime(" at %H:%M:%S UTC", time.gmtime(float(g["t"])))
              if g.get("t") else "")
        return f"instance {g['instance']} {g['call']} after {g['waited_s']:.1f} s{at}"

    return (f"app {app}: an instance gave up waiting for a call {len(items)} time(s) and "
            f"started over: {'; '.join(one(g) for g in items)}")


__all__ = ["gave_up", "note"]
