"""`verifier cluster up/status/down` as a user runs them, in separate processes."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from tests.conftest import port_base

pytestmark = pytest.mark.integration


def _cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verifier", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_up_status_down_single_node(tmp_path):
    state = str(tmp_path / "c1")
    base = str(port_base("cli"))
    up = _cli("cluster", "up", "--nodes", "1", "--base-port", base, "--state-dir", state)
    try:
        assert up.returncode == 0, up.stderr
        assert f"bootstrap servers: 127.0.0.1:{port_base('cli') + 1}" in up.stdout
        again = _cli("cluster", "up", "--nodes", "1", "--base-port", base, "--state-dir", state)
        assert again.returncode == 0
        assert "already running" in again.stdout
        status = _cli("cluster", "status", "--state-dir", state)
        assert status.returncode == 0 and "node 1: running" in status.stdout
        # a stale folder: the JVM dies behind the tool's back
        kill = _cli("cluster", "kill", "1", "--state-dir", state)
        assert kill.returncode == 0 and "node 1: dead" in kill.stdout
        status = _cli("cluster", "status", "--state-dir", state)
        assert status.returncode == 2 and "node 1: dead" in status.stdout
        stale = _cli("cluster", "up", "--nodes", "1", "--base-port", base, "--state-dir", state)
        assert stale.returncode == 0, stale.stderr
        assert "stale" in stale.stdout
    finally:
        down = _cli("cluster", "down", "--state-dir", state)
    assert down.returncode == 0
    assert "stopped" in down.stdout
    assert _cli("cluster", "status", "--state-dir", state).returncode == 2


def test_port_taken_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", port_base("cli-busy") + 1))
        s.listen()
        res = _cli("cluster", "up", "--nodes", "1", "--base-port", str(port_base("cli-busy")),
                   "--state-dir", str(tmp_path / "c2"), timeout=120)
    assert res.returncode == 2
    assert f"port {port_base('cli-busy') + 1}" in res.stderr and "already in use" in res.stderr
    assert "Traceback" not in res.stderr
