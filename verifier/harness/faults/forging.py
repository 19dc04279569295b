"""How a connection through the proxy sends the answers an ``error_answer`` rule forges
(verifier.harness.faults.connection; the rule's choices: verifier.harness.faults.error_rules).

A refused request is not forwarded: its answer waits in the connection's ``pending``
queue behind the requests sent before it and goes to the client in its turn, since a
client pairs answers with requests in order (the Java client fails a connection whose
answer does not carry the oldest correlation id). A replaced answer is the broker's,
rewritten as it passes. An answer that cannot be forged (a version newer than the
codec's schemas) is not: the request or the broker's answer goes on untouched, counted as
the rule's ``unforged``. A refused answer may be due ``ms`` after its request (the rule's
``ms``: a broker that takes that long to refuse); the answers behind it wait for it, as a
broker's answers on one connection come in order.
"""

from __future__ import annotations

import asyncio
import logging

from verifier.harness.faults import error_rules
from verifier.harness.kafka_wire import WireError, frame, refused_response, replaced_response

log = logging.getLogger(__name__)


def refuse(conn, rule, payload: bytes, corr: int) -> bool:
    """Answer the request ``payload`` on ``conn`` with the rule's error instead of
    forwarding it; False (forward it) if its answer cannot be forged."""
    try:
        answer = refused_response(payload, rule.error_code)
    except WireError as exc:
        error_rules.missed(rule)
        log.warning("conn %s: request forwarded, no error answer: %s", conn.id, exc)
        return False
    due = asyncio.get_running_loop().time() + rule.ms / 1000.0
    conn.pending.append((corr, None, None, None, None, Refused(answer, due)))
    error_rules.forged(rule, conn.client_id)
    conn.counters["errors_forged"] += 1
    send_refused(conn)
    return True


def replace(conn, rule, payload: bytes, api_key: int, version: int) -> bytes:
    """The broker's answer with the rule's error in it (untouched if it cannot be)."""
    try:
        answer = replaced_response(payload, api_key, version, rule.error_code)
    except WireError as exc:
        error_rules.missed(rule)
        log.warning("conn %s: answer forwarded, not replaced: %s", conn.id, exc)
        return payload
    error_rules.forged(rule, conn.client_id)
    conn.counters["errors_forged"] += 1
    return answer


class Refused:
    """A refused request's forged answer, in the connection's ``pending`` queue, and the
    loop time it is due at."""

    __slots__ = ("answer", "due")

    def __init__(self, answer: bytes, due: float) -> None:
        self.answer, self.due = answer, due


def send_refused(conn) -> None:
    """Queue for the client the refused requests' answers whose turn has come (every
    request before them answered), each at the time it is due."""
    while conn.pending and isinstance(conn.pending[0][5], Refused) and conn.to_client:
        refused = conn.pending.popleft()[5]
        conn.to_client.put_nowait((refused.due, frame(refused.answer)))
