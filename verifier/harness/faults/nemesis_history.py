"""What the nemesis writes: ``nemesis.jsonl`` (docs/formats.md §3), and the proxy's hold
events copied into it.

A ``hold`` fault's proxy rule acts on its own (it holds a request, later releases it and
sees the broker's answer): while the schedule has one, :class:`HoldEvents` copies those
proxy events into the history as ``event`` lines (``f``: ``hold``, ``release``,
``answer``) with the fault's id and the request's identity.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from verifier.rundata.errors import VerifierError, WaitTimeout
from verifier.rundata.formats import header
from verifier.rundata.nemesis import NEMESIS_FORMAT
from verifier.rundata.waiting import wait_until

log = logging.getLogger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


class NemesisHistory:
    """``nemesis.jsonl``: a header, then invoke/completion pairs, flushed line by line."""

    def __init__(self, path: Path, run_id: str, seed: int) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(path)
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._lock = threading.Lock()
        self.write({"type": "header", **header(NEMESIS_FORMAT, run=run_id, seed=seed)})

    def write(self, record: dict) -> None:
        with self._lock:
            if self._file.closed:  # a settling heal that ends after a Ctrl-C's teardown
                log.info("nemesis history closed; not written: %s", record)
                return
            self._file.write(json.dumps(record, separators=(",", ":"), default=str) + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


class HoldEvents:
    """Copies the proxy's new hold / release / answer events into the history, while
    the schedule runs (a poller) and once more after the heal."""

    def __init__(self, proxy, history: NemesisHistory, lock: threading.Lock,
                 stop: threading.Event, faults_by_rule: Callable[[], dict]) -> None:
        """``lock``: the nemesis's action lock; ``faults_by_rule()``: proxy rule id ->
        the fault that set it (asked under the lock)."""
        self.proxy, self.history, self._lock, self._stop = proxy, history, lock, stop
        self._faults_by_rule = faults_by_rule
        self._seq = 0  # the last proxy hold event copied
        self._poller: threading.Thread | None = None

    def start(self) -> None:
        """Skip the events before this run; copy the new ones every 0.2 s."""
        self._seq = max((e["seq"] for e in self.proxy.holds(0)), default=0)
        self._poller = threading.Thread(target=self._poll, name="nemesis-holds", daemon=True)
        self._poller.start()

    def _poll(self, interval: float = 0.2) -> None:
        while not self._stop.wait(interval):
            self.copy()

    def copy(self) -> list[dict]:
        """Copy the new events, each with the id of the fault whose rule made it. Under
        the action lock, so a rule's fault is known before its first event is copied."""
        with self._lock:
            try:
                events = self.proxy.holds(self._seq)
            except VerifierError as exc:
                log.warning("nemesis: hold events not read: %s", exc)
                return []
            faults = self._faults_by_rule()
            for e in events:
                self._seq = max(self._seq, e["seq"])
                fault = faults.get(e["rule"])
                detail = {k: v for k, v in e.items() if k not in ("seq", "event", "t")}
                self.history.write({"type": "event", "f": e["event"], "fault": "hold",
                                    "target": fault.target if fault else {},
                                    "id": fault.id if fault else 0, "t": e["t"],
                                    "detail": detail})
            return events

    def finish(self, timeout: float = 5.0) -> None:
        """After the heal: what the proxy still reports (releases at the rules'
        removal, and the broker's answers to them, awaited a few seconds)."""
        if self._poller is not None:
            self._poller.join(2)
        released, answered = set(), set()

        def all_answered() -> tuple[bool, set]:
            for e in self.copy():
                if e["event"] == "release" and e.get("delivered") and \
                        e.get("request", {}).get("acks") != 0:
                    released.add(e["hold"])
                elif e["event"] == "answer":
                    answered.add(e["hold"])
            return released <= answered, released - answered

        try:
            wait_until(all_answered, timeout=timeout, what="the broker's answers to the "
                       "released requests", expected="an answer per release", interval=0.1,
                       max_interval=0.1)
        except WaitTimeout:
            pass  # a release the broker never answered stays without an answer event
