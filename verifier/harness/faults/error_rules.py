"""The ``error_answer`` rule's pure decisions: which requests it answers with an error,
and what it counts (verifier.harness.faults.rule_params describes its parameters).

A rule *matches* a request of its APIs, transactional id, client id, partition and topic;
of those it *chooses* (after ``skip``) the ``next`` N, every K-th, or each with
``probability`` P drawn from its seeded generator (the same seed and request stream give
the same choices), up to ``limit``. Its ``hits`` are the answers it forged and sent to
the client (a refused request's at once, a replaced one's when the broker answered):
what the exposure counts per column (heal detail ``clients``: [matched, forged] per
client id, verifier.judge.faults.proxy).
"""

from __future__ import annotations

from verifier.harness.kafka_wire import RequestIdentity


def matches(rule, request: RequestIdentity) -> bool:
    """Whether an ``error_answer`` rule matches ``request``, regardless of how many it
    chose already. An acks=0 Produce gets no answer, so none is forged for it."""
    if rule.kind != "error_answer" or request.api_key not in rule.api_keys:
        return False
    if request.acks == 0:
        return False
    if rule.transactional_id is not None and request.transactional_id != rule.transactional_id:
        return False
    if rule.client_id is not None and request.client_id != rule.client_id:
        return False
    return request.touches(rule.partition, rule.topic)


def choose(rule, request: RequestIdentity) -> bool:
    """Count a match; True for a request whose answer the rule forges."""
    if not matches(rule, request):
        return False
    rule.matched += 1
    rule.note(request.client_id, False)
    if rule.matched <= rule.skip or (rule.limit is not None and rule.chosen >= rule.limit):
        return False
    if rule.next is not None:
        hit = rule.chosen < rule.next
    elif rule.every is not None:
        hit = (rule.matched - rule.skip) % rule.every == 0
    else:
        hit = rule._rng.random() < (rule.probability or 0.0)  # drawn on every match
    rule.chosen += int(hit)
    return hit


def forged(rule, client_id: str | None) -> None:
    """Count an answer the rule forged and sent to ``client_id``."""
    rule.hits += 1
    rule.note(client_id, True, matched=False)


def missed(rule) -> None:
    """Count a chosen request whose answer could not be forged (a version newer than the
    codec's schemas, an answer that did not parse): it went on untouched."""
    rule.unforged += 1
