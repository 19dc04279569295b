"""The proxy's fault rules as set: their kinds and parameters, parsed and checked.

A rule is set over the proxy's control interface as JSON and applies to the brokers it
names (``broker``: a node id, or null for every broker), to existing connections as well
as new ones, until it is removed. Kinds:

``drop_response``
    Forward the request (the broker appends), then lose the response of a matching API
    (default Produce). ``action`` ``drop`` swallows it (the client waits
    ``request.timeout.ms``, then retries); ``close`` closes both sockets instead (an
    immediate connection error, then a retry). Which responses: ``next`` N (the next N),
    ``every`` K (every K-th), or ``probability`` P with ``seed`` S (reproducible);
    ``limit`` caps the total. ``appended`` true: only a Produce response that answers an
    append (some partition without error) matches; an error response passes untouched
    (the broker wrote nothing, so losing it loses no acknowledgement).
``latency``
    Delay every frame by ``ms`` in ``direction`` ``downstream`` (responses, default),
    ``upstream`` (requests) or ``both``; order is kept.
``blackhole``
    Forward nothing in either direction; connections stay open (requests vanish).
``reset``
    Reset (RST) every open connection when set, and every new one while set.
``hold``
    Keep a matching request (``api_keys``, default Produce; optionally its
    ``transactional_id``, a ``partition`` it writes and its ``topic``, for EndTxn
    ``committed`` true or false; ``skip`` matches first, then ``limit`` requests, default
    1) instead of forwarding it; the broker-side connection stays open for it. The
    client sees ``client_view`` ``timeout`` (its connection stalls: nothing more is
    forwarded on it, until it gives up) or ``reset`` (its side of the connection is
    reset at once); ``copy``: the request goes on at once and the client gets its answer,
    the proxy holds a copy of it (a retry whose original was delayed in the network),
    whose answer is recorded, never sent to the client. The request goes to the broker when
    ``release_on`` passes the proxy (``{"api_key": 26, "direction": "response",
    "transactional_id": "same"}``: the EndTxn response of the held request's
    transactional id; ``"same"``, a literal id, or absent for any; ``"ok": true``: only
    a response without error), or after
    ``release_after_ms``, whichever comes first, or when the rule is removed.
    ``then_hold`` (``{"api_keys": [24, 0], "max_ms": 10000}``): once it released a
    request, the rule holds back the next requests of those APIs with the released
    request's transactional id (the client sees only a delay: its connection keeps its
    order) until the broker has answered every request the rule released, or ``max_ms``
    passed: the late request is applied before the client's next step.
    ``release_on.after`` (``{"api_key": 26, "direction": "response"}``): the release_on
    event counts only once this event of the same transactional id passed after the hold
    (the held request's own transaction ended: its next AddPartitionsToTxn is the next
    transaction's); from that event on the rule holds no new request.
    ``release_on.partition`` (a number, or ``"same"``: the held request's): the event
    must add or write that partition (a next transaction's first AddPartitionsToTxn may
    add only other partitions). ``release_on.records`` (``"abort"`` or ``"commit"``, on a
    Produce): the event's records must say their transaction is meant to abort (commit),
    in the generators' record format (verifier.rundata.records): a stale EndTxn(commit)
    released into a transaction its producer then aborts shows as an aborted read.
    ``release_on.producer`` (``"same"``): the event carries the held request's producer
    id and epoch (a WriteTxnMarkers copy under transaction version 2 has the epoch of the
    producer's next transaction, and only that one). ``"ok": true`` on a Produce: no
    partition answered with an error. A held request without a transactional id (a
    WriteTxnMarkers, coordinator to leader, on the inter-broker listener) gates, with
    ``then_hold``, the transactional id of the event that released it (``release_on``
    names one).
    ``after_marker`` (``abort``, ``commit`` or ``any``; held Produce or TxnOffsetCommit
    requests only): the
    ``release_on`` event does not release the request yet; it starts ``then_hold``'s gate
    and the proxy watches the partition the request writes (the rule's ``partition``, else
    its first; a TxnOffsetCommit's group's ``__consumer_offsets`` partition) until the
    marker of that type of the request's producer id and epoch is in
    its log (verifier.harness.faults.marker_probe), then releases it: a late Produce lands
    after its own transaction's marker, which the coordinator writes after it answered
    EndTxn, between brokers. From that event on the rule holds no new request (one that
    matches belongs to a later transaction).
    ``records`` (``"abort"`` or ``"commit"``; held Produce or TxnOffsetCommit requests):
    hold only a request whose records (a TxnOffsetCommit: its offsets' metadata, where the
    copier writes it) say their transaction is meant to abort (commit).

``error_answer``
    Answer a matching request (``api``: ``produce``, the default, or the transaction
    APIs by name: ``init-producer-id``, ``add-partitions-to-txn``, ``add-offsets-to-txn``,
    ``end-txn``, ``txn-offset-commit``, ``find-coordinator``; one name or a list) with
    Kafka's error ``error`` (its name, ``NOT_LEADER_OR_FOLLOWER``), in every partition of
    the answer. ``variant`` ``refuse``: the request never reaches the broker, the proxy
    answers it (as a broker that is not the leader does); ``replace``: it goes on, and the
    broker's answer has its error codes replaced (a leader that appended and answered
    REQUEST_TIMED_OUT), only with a retriable error, the only kind a broker that did the
    work answers, and which every client's outcome table takes as "may have happened".
    Which requests: ``transactional_id``, ``client_id``, a ``partition`` and ``topic``
    it writes (every partition of a chosen request gets the error), ``skip`` N first,
    then ``next`` N (the first N it matches), ``every`` K or ``probability`` P with
    ``seed``; ``limit`` caps the answers chosen. An acks=0 Produce, which gets no answer,
    is never chosen (verifier.harness.faults.error_rules). ``ms`` (refuse only): the
    refused answer reaches the client that long after its request (a broker that takes
    that long to refuse), the answers behind it on the connection after it.

The rules' decisions are in verifier.harness.faults.rules.
"""

from __future__ import annotations

from verifier.harness.kafka_wire import (
    API_BY_NAME,
    API_END_TXN,
    API_PRODUCE,
    API_TXN_OFFSET_COMMIT,
    API_WRITE_TXN_MARKERS,
    ERROR_CODES,
    retriable,
)

KINDS = ("drop_response", "latency", "blackhole", "reset", "hold", "error_answer")
VARIANTS = ("refuse", "replace")
#: the errors a replaced answer may carry: the retriable ones (tests/unit/producers:
#: every client's outcome table takes a send or commit that ended with one as "info")
REPLACE_ERRORS = tuple(sorted(n for n, code in ERROR_CODES.items() if retriable(code)))
DIRECTIONS = ("downstream", "upstream", "both")
CLIENT_VIEWS = ("timeout", "reset", "copy")
RELEASE_DIRECTIONS = ("request", "response")
RELEASE_KEYS = {"api_key", "direction", "transactional_id", "ok", "after", "partition",
                "records", "producer"}
RELEASE_RECORDS = ("abort", "commit")
THEN_HOLD_KEYS = {"api_keys", "max_ms"}
MARKER_KINDS = ("abort", "commit", "any")
#: every field a rule may set
FIELDS = {"kind", "broker", "api_keys", "action", "appended", "next", "every", "probability",
          "at_least_every", "seed", "limit", "ms", "direction", "transactional_id", "partition",
          "topic",
          "client_view", "release_on", "release_after_ms", "skip", "then_hold", "committed",
          "after_marker", "records", "api", "error", "variant", "client_id"}


class RuleError(ValueError):
    """A rule that cannot be applied (bad kind or parameters)."""


def fields_of(data: dict) -> dict:
    """A rule's fields from the control interface's JSON, parsed (not yet checked
    together: :func:`check`). RuleError for an unknown field or kind, or a value of the
    wrong type."""
    if not isinstance(data, dict):
        raise RuleError(f"a rule is a JSON object, not {type(data).__name__}")
    unknown = set(data) - FIELDS
    if unknown:
        raise RuleError(f"unknown rule fields {sorted(unknown)}")
    kind = data.get("kind")
    if kind not in KINDS:
        raise RuleError(f"unknown rule kind {kind!r}; expected one of {KINDS}")
    try:
        return dict(
            kind=kind,
            broker=None if data.get("broker") is None else int(data["broker"]),
            api_keys=_api_keys(data),
            action=str(data.get("action", "drop")),
            appended=_opt_bool(data.get("appended")),
            next=_opt_int(data.get("next")),
            every=_opt_int(data.get("every")),
            probability=None if data.get("probability") is None
            else float(data["probability"]),
            at_least_every=_opt_int(data.get("at_least_every")),
            seed=int(data.get("seed", 0)),
            limit=_opt_int(data.get("limit")),
            ms=int(data.get("ms", 0)),
            direction=str(data.get("direction", "downstream")),
            transactional_id=_opt_str(data.get("transactional_id")),
            partition=_opt_int(data.get("partition")),
            topic=_opt_str(data.get("topic")),
            client_view=str(data.get("client_view", "timeout")),
            release_on=_release_on(data.get("release_on")),
            release_after_ms=_opt_int(data.get("release_after_ms")),
            skip=int(data.get("skip", 0)),
            then_hold=_then_hold(data.get("then_hold")),
            committed=None if data.get("committed") is None
            else _opt_bool(data["committed"]),
            after_marker=_opt_str(data.get("after_marker")),
            records=_opt_str(data.get("records")),
            error=_opt_str(data.get("error")),
            variant=_opt_str(data.get("variant")),
            client_id=_opt_str(data.get("client_id")),
        )
    except (TypeError, ValueError) as exc:
        raise RuleError(f"bad rule {data}: {exc}") from exc


def check(rule) -> None:
    """RuleError unless the parsed rule's parameters go together (per kind)."""
    if rule.kind == "drop_response":
        chosen = [k for k in ("next", "every", "probability") if getattr(rule, k) is not None]
        if len(chosen) != 1:
            raise RuleError("drop_response needs exactly one of next, every, probability")
        if rule.action not in ("drop", "close"):
            raise RuleError(f"action must be drop or close, not {rule.action!r}")
        if rule.probability is not None and not 0 <= rule.probability <= 1:
            raise RuleError(f"probability {rule.probability} is outside 0..1")
        if rule.appended and set(rule.api_keys) != {API_PRODUCE}:
            raise RuleError("appended applies to Produce responses only (api_keys [0])")
        if rule.at_least_every is not None and (rule.probability is None
                                                or rule.at_least_every < 1):
            raise RuleError("at_least_every goes with probability, and is >= 1")
        if (rule.next is not None and rule.next < 0) or (
                rule.every is not None and rule.every < 1):
            raise RuleError("next must be >= 0 and every >= 1")
    if rule.kind == "hold":
        if rule.client_view not in CLIENT_VIEWS:
            raise RuleError(f"client_view must be one of {CLIENT_VIEWS}, "
                            f"not {rule.client_view!r}")
        if rule.release_on is None and rule.release_after_ms is None:
            raise RuleError("hold needs release_on, release_after_ms or both (removing "
                            "the rule releases what it still holds)")
        if rule.release_after_ms is not None and rule.release_after_ms <= 0:
            raise RuleError("release_after_ms must be > 0")
        if rule.skip < 0 or (rule.limit is not None and rule.limit < 1):
            raise RuleError("skip must be >= 0 and limit >= 1")
        if rule.committed is not None and set(rule.api_keys) not in (
                {API_END_TXN}, {API_WRITE_TXN_MARKERS}):
            raise RuleError("committed applies to EndTxn or WriteTxnMarkers requests only "
                            "(api_keys [26] or [27])")
        if rule.after_marker is not None and (
                rule.after_marker not in MARKER_KINDS or rule.release_on is None
                or set(rule.api_keys) not in ({API_PRODUCE}, {API_TXN_OFFSET_COMMIT})):
            raise RuleError(f"after_marker must be one of {MARKER_KINDS}, with release_on, "
                            "on held Produce or TxnOffsetCommit requests (api_keys [0] or "
                            "[28]): the marker is looked for in the partition the request "
                            "writes")
        if rule.records is not None and (
                rule.records not in RELEASE_RECORDS
                or not set(rule.api_keys) <= {API_PRODUCE, API_TXN_OFFSET_COMMIT}):
            raise RuleError(f"records must be one of {RELEASE_RECORDS}, on held Produce or "
                            "TxnOffsetCommit requests (api_keys [0], [28])")
        if rule.then_hold is not None and not set(rule.api_keys) <= TXN_APIS:
            raise RuleError("then_hold needs held requests that carry a transactional "
                            "id (the next requests are those of the same id)")
        if rule.release_on is not None and \
                rule.release_on.get("transactional_id") == "same" and \
                not set(rule.api_keys) <= TXN_APIS:
            raise RuleError("release_on transactional_id \"same\" needs held requests "
                            "that carry a transactional id")
    if rule.kind == "error_answer":
        _check_error_answer(rule)
    if rule.kind == "latency":
        if rule.ms <= 0:
            raise RuleError("latency needs ms > 0")
        if rule.direction not in DIRECTIONS:
            raise RuleError(f"direction must be one of {DIRECTIONS}")


def _api_keys(data: dict) -> tuple[int, ...]:
    """``api`` (names, an error answer's) or ``api_keys`` (numbers); default Produce."""
    if "api" not in data:
        return tuple(int(k) for k in data.get("api_keys", (API_PRODUCE,)))
    if "api_keys" in data:
        raise RuleError("give api (names) or api_keys (numbers), not both")
    names = [data["api"]] if isinstance(data["api"], str) else data["api"]
    if not isinstance(names, list) or not names or \
            any(n not in API_BY_NAME for n in names):
        raise RuleError(f"api must be one of {sorted(API_BY_NAME)} or a list of them, "
                        f"not {data['api']!r}")
    return tuple(API_BY_NAME[n] for n in names)


def _check_error_answer(rule) -> None:
    if rule.error not in ERROR_CODES:
        raise RuleError(f"error_answer needs error, one of Kafka's error names "
                        f"(NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, ...), not {rule.error!r}")
    if rule.variant not in VARIANTS:
        raise RuleError(f"variant must be one of {VARIANTS}, not {rule.variant!r}")
    if rule.variant == "replace" and rule.error not in REPLACE_ERRORS:
        raise RuleError(f"variant replace takes a retriable error (a broker that did the "
                        f"work answers no other, and only a retriable one tells every "
                        f"client's outcome table \"may have happened\"); {rule.error} is not")
    if not set(rule.api_keys) <= set(API_BY_NAME.values()):
        raise RuleError(f"error_answer answers {sorted(API_BY_NAME)} (api), not api keys "
                        f"{sorted(set(rule.api_keys) - set(API_BY_NAME.values()))}")
    chosen = [k for k in ("next", "every", "probability") if getattr(rule, k) is not None]
    if len(chosen) != 1:
        raise RuleError("error_answer needs exactly one of next, every, probability")
    if rule.probability is not None and not 0 <= rule.probability <= 1:
        raise RuleError(f"probability {rule.probability} is outside 0..1")
    if rule.ms < 0 or (rule.ms and rule.variant != "refuse"):
        raise RuleError(f"ms (the refused answer's delay) is for variant refuse, >= 0; not "
                        f"{rule.ms} with variant {rule.variant}")
    if (rule.next is not None and rule.next < 0) or (rule.every is not None and rule.every < 1) \
            or rule.skip < 0 or (rule.limit is not None and rule.limit < 1):
        raise RuleError("next and skip must be >= 0, every and limit >= 1")


def _opt_int(value) -> int | None:
    return None if value is None else int(value)


def _opt_bool(value) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RuleError(f"expected true or false, not {value!r}")
    return value


def _opt_str(value) -> str | None:
    if value is not None and not isinstance(value, str):
        raise RuleError(f"expected a string, not {value!r}")
    return value


#: the APIs whose requests carry a transactional id (Produce from v3; WriteTxnMarkers,
#: which names the producer id only, gets it from the proxy: Holds.attribute)
TXN_APIS = {0, 22, 24, 25, 26, 27, 28}


def _then_hold(value) -> dict | None:
    """``{"api_keys": [24, 0], "max_ms": 10000}`` (both optional)."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - THEN_HOLD_KEYS:
        raise RuleError(f"then_hold must be an object with optionally api_keys and max_ms; "
                        f"not {value!r}")
    keys = tuple(int(k) for k in value.get("api_keys", (24, 0)))
    max_ms = int(value.get("max_ms", 10000))
    if not keys or not set(keys) <= TXN_APIS or max_ms <= 0:
        raise RuleError(f"then_hold: api_keys must name transactional APIs {sorted(TXN_APIS)} "
                        f"and max_ms be > 0; not {value!r}")
    return {"api_keys": list(keys), "max_ms": max_ms}


def _release_on(value) -> dict | None:
    """``{"api_key": K, "direction": "request"|"response", "transactional_id": ...}``."""
    if value is None:
        return None
    if not isinstance(value, dict) or "api_key" not in value or set(value) - RELEASE_KEYS:
        raise RuleError(f"release_on must be an object with api_key and optionally "
                        f"direction, transactional_id; not {value!r}")
    out = {"api_key": int(value["api_key"]),
           "direction": str(value.get("direction", "response"))}
    if out["direction"] not in RELEASE_DIRECTIONS:
        raise RuleError(f"release_on direction must be one of {RELEASE_DIRECTIONS}")
    if value.get("transactional_id") is not None:
        out["transactional_id"] = _opt_str(value["transactional_id"])
    if value.get("ok"):
        if out["direction"] != "response":
            raise RuleError("release_on ok applies to a response")
        out["ok"] = True
    if value.get("partition") is not None:
        part = value["partition"]
        if part != "same" and (isinstance(part, bool) or not isinstance(part, int)):
            raise RuleError(f"release_on partition is a partition number or \"same\"; "
                            f"not {part!r}")
        out["partition"] = part
    if value.get("records") is not None:
        if value["records"] not in RELEASE_RECORDS or out["api_key"] != API_PRODUCE:
            raise RuleError(f"release_on records is one of {RELEASE_RECORDS}, on a Produce "
                            f"(api_key 0); not {value['records']!r}")
        out["records"] = value["records"]
    if value.get("producer") is not None:
        if value["producer"] != "same":
            raise RuleError(f"release_on producer is \"same\" (the held request's producer "
                            f"id and epoch); not {value['producer']!r}")
        out["producer"] = "same"
    if value.get("after") is not None:
        after = value["after"]
        if not isinstance(after, dict) or "api_key" not in after or \
                set(after) - {"api_key", "direction"}:
            raise RuleError(f"release_on after must be an object with api_key and optionally "
                            f"direction; not {after!r}")
        out["after"] = {"api_key": int(after["api_key"]),
                        "direction": str(after.get("direction", "response"))}
        if out["after"]["direction"] not in RELEASE_DIRECTIONS:
            raise RuleError(f"release_on after direction must be one of {RELEASE_DIRECTIONS}")
    return out
