"""What a hold rule did, per client and transactional id (verifier.harness.faults.hold_tally,
the counts a hold's heal records for the exposure, issue 45): held, released into the
event it waits for or at its bound, and answered, with the answers' error codes. The
proxy's own loop in front of test_then_hold's stand-in broker (real captured frames, no
Kafka); and a hold whose trigger never came keeps its rule in the history, through the
nemesis and the proxy's real control interface."""

from __future__ import annotations

import asyncio
import json
import threading

from tests.unit.harness.test_then_hold import (
    COPY,
    RULE,
    TXN,
    _copy_scenario,
    _free_port,
    _scenario,
)
from verifier.harness.faults.control import ProxyClient, handle_http
from verifier.harness.faults.kinds import FaultEnv
from verifier.harness.faults.nemesis import Nemesis
from verifier.harness.faults.proxy import Proxy
from verifier.harness.faults.spec import build_schedule, parse_spec


def _holds(rule_dict: dict) -> dict:
    (entry,) = rule_dict["holds"]
    return {k: v for k, v in entry.items() if k != "client_id"}


def test_a_request_released_into_its_event_is_counted_with_the_brokers_answer():
    rules: list = []
    asyncio.run(_scenario(RULE, rules=rules))
    assert _holds(rules[0].to_json()) == {
        "transactional_id": TXN, "held": 1, "on_event": 1, "at_bound": 0, "answered": 1,
        "awaiting": 0, "errors": {"0": 1}}


def test_a_request_released_at_its_bound_is_not_counted_as_answered_in_its_event():
    """The event never comes (another transactional id's EndTxn): the time bound
    releases it and the broker answers, but not in the window the fault needs."""
    rules: list = []
    other = {**RULE, "release_on": {**RULE["release_on"], "transactional_id": "someone"},
             "release_after_ms": 100}
    _, events = asyncio.run(_scenario(other, rules=rules))
    assert [e["event"] for e in events] == ["hold", "release", "answer"]
    assert _holds(rules[0].to_json()) == {
        "transactional_id": TXN, "held": 1, "on_event": 0, "at_bound": 1, "answered": 0,
        "awaiting": 0, "errors": {}}


def test_a_copy_released_into_its_event_is_counted_with_its_answer():
    rules: list = []
    asyncio.run(_copy_scenario({**COPY, "committed": True}, rules=rules))
    got = _holds(rules[0].to_json())
    assert (got["held"], got["on_event"], got["answered"]) == (1, 1, 1), got
    assert got["transactional_id"] == TXN


class _ProxyThread:
    """The real proxy and its control interface on an event loop of their own."""

    def __init__(self) -> None:
        self.port = _free_port()
        self._ready, self._loop = threading.Event(), None
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        proxy = Proxy({1: (_free_port(), _free_port())})
        await proxy.start()
        server = await asyncio.start_server(lambda r, w: handle_http(proxy, r, w),
                                            "127.0.0.1", self.port)
        self._ready.set()
        await self._stop.wait()
        server.close()
        await proxy.close()

    def __enter__(self) -> ProxyClient:
        self._thread.start()
        assert self._ready.wait(5)
        return ProxyClient(self.port)

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)


def test_a_hold_whose_trigger_never_came_keeps_its_rule_in_the_history(tmp_path):
    """Its transactional id names the one column the missed trigger concerns
    (verifier.judge.faults.proxy): the ``fail`` line carries the removed rule."""
    params = {"api_keys": [26], "transactional_id": "run.tx2-0", "release_after_ms": 1000,
              "release_on": {"api_key": 24, "direction": "response"},
              "trigger": "held", "within": 0.3}
    spec = parse_spec({"kind": "hold", "target": {"all": True}, "start": 0, "duration": 1,
                       "params": params}, "s")
    path = tmp_path / "nemesis.jsonl"
    with _ProxyThread() as client:
        env = FaultEnv("unused:9092", proxy=client)
        with Nemesis(build_schedule([spec], seed=1, run_seconds=2), env, path, "run") as n:
            n.wait_done(timeout=10)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    (fail,) = [x for x in lines if x.get("type") == "fail"]
    assert "did not come within" in fail["error"], fail
    assert fail["detail"]["rule"]["transactional_id"] == "run.tx2-0"
    assert fail["detail"]["rule"]["api_keys"] == [26]
