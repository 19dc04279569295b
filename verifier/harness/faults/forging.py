"""How a connection through the proxy sends the answers an ``error_answer`` rule forges
(verifier.harness.faults.connection; the rule's choices: verifier.harness.faults.error_rules).

A refused request is not forwarded: its answer waits in the connection's ``pending``
queue behind the requests sent before it and goes to the client in its turn, since a
client pairs answers with requests in order (the Java client fails a connection whose
answer does not carry the oldest correlation id). A replaced answer is the broker's,
rewritten as it passes. An answer that cannot be forged (a version newer than the
codec's schemas) is not: the request or the broker's answer goes on untouched, counted as
the rule's ``unforged``.
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
    conn.pending.append((corr, None, None, None, None, answer))
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


def send_refused(conn) -> None:
    """Send the refused requests' answers whose turn has come (every request before
    them answered) to the client."""
    while conn.pending and isinstance(conn.pending[0][5], bytes) and conn.to_client:
        answer = conn.pending.popleft()[5]
        conn.to_client.put_nowait((asyncio.get_running_loop().time(), frame(answer)))
