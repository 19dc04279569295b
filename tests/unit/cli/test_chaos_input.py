"""`verifier chaos` refuses bad input before anything starts (issue 17).

Each row: the arguments, the exit code, a word of the one message. Usage errors exit 64,
an unusable environment 2; one line on stderr, no traceback, in well under the time a
JVM needs; nothing is started (the run itself is replaced by a tripwire).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import verifier.api._process as process
from verifier import api
from verifier.cli import main

BAD_FAULTS = {
    "unknown-field": 'kind = "producer-kill"\ntarget = { process = "producer:idempotent" }\n'
                     'start = 2\ncolour = "red"',
    "unknown-kind": 'kind = "meteor-strike"\nstart = 2',
    "negative-duration": 'kind = "broker-pause"\ntarget = { node = 1 }\nstart = 2\n'
                         'duration = -3',
    "after-the-end": 'kind = "broker-pause"\ntarget = { node = 1 }\nstart = 18\n'
                     'duration = 5',
}


def scenario_file(tmp_path, name: str) -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'description = "bad"\n[workload]\nduration_s = 20\n\n[[faults]]\n'
                    f"{BAD_FAULTS[name]}\n")
    return str(path)


def _listener(reply: bytes | None, accepted: threading.Event | None = None) -> str:
    """A TCP server on a free local port that answers every connection with ``reply``
    (an HTTP server, say), or holds it open without a word (None); ``accepted`` is set
    once a request has come in."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        held = []
        while True:
            conn, _ = server.accept()
            conn.recv(64)
            if accepted is not None:
                accepted.set()
            if reply is None:
                held.append(conn)
            else:
                conn.sendall(reply)
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"127.0.0.1:{server.getsockname()[1]}"


def _cases(tmp_path):
    conflicting = tmp_path / "conflicting.properties"
    conflicting.write_text("enable.idempotence=true\nacks=1\n")
    unknown = tmp_path / "unknown.properties"
    unknown.write_text("no.such.setting=1\n")
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    out = str(tmp_path / "out")
    return {
        "unknown scenario": (["--scenario", "nope", "--out", out], 64, "unknown scenario"),
        "unknown profile": (["--profile", "huge", "--out", out], 64, "unknown profile"),
        "missing scenario file": (["--scenario", str(tmp_path / "gone.toml")], 64,
                                  "cannot read scenario file"),
        **{f"fault {k}": (["--scenario", scenario_file(tmp_path, k), "--out", out], 64, word)
           for k, word in (("unknown-field", "unknown fields"),
                           ("unknown-kind", "unknown fault kind"),
                           ("negative-duration", "duration"),
                           ("after-the-end", "after the"))},
        # the quick profile has several scenarios: still one message
        "conflicting producer settings": (["--profile", "quick", "--producer-config",
                                           str(conflicting), "--out", out], 64,
                                          "idempotence needs acks=all"),
        "unknown producer setting": (["--scenario", "baseline", "--producer-config",
                                      str(unknown), "--out", out], 64, "no.such.setting"),
        "--out is a file": (["--scenario", "baseline", "--out", str(a_file)], 2,
                            "is a file"),
        "unreachable cluster": (["--scenario", "baseline", "--out", out,
                                 "--bootstrap-servers", "127.0.0.1:1"], 2, "no broker reachable"),
        "not a Kafka broker": (["--scenario", "baseline", "--out", out, "--bootstrap-servers",
                                _listener(b"HTTP/1.1 400 Bad Request\r\n\r\n")], 2,
                               "answered, but not as a Kafka broker: it replied b'HTTP/1.1 400"),
        "bad JAVA_HOME": (["--scenario", "baseline", "--out", out], 2, "JAVA_HOME"),
        "bad --spark-conf": (["--scenario", "baseline", "--spark-conf", "spark.cores.max"],
                             64, "expected KEY=VALUE"),
        "--keep-topics alone": (["--scenario", "baseline", "--keep-topics", "--out", out],
                                64, "--keep-topics goes with --bootstrap-servers"),
        "--out inside --state-dir": (["--scenario", "baseline", "--state-dir",
                                      str(tmp_path / "state"), "--out",
                                      str(tmp_path / "state" / "runs")], 64,
                                     "deleted when the run ends"),
    }


CASES = ["unknown scenario", "unknown profile", "missing scenario file",
         "fault unknown-field", "fault unknown-kind", "fault negative-duration",
         "fault after-the-end", "conflicting producer settings", "unknown producer setting",
         "--out is a file", "unreachable cluster", "not a Kafka broker", "bad JAVA_HOME",
         "bad --spark-conf", "--out inside --state-dir", "--keep-topics alone"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_refused_before_start(case, tmp_path, monkeypatch, capsys):
    argv, code, word = _cases(tmp_path)[case]
    if case == "bad JAVA_HOME":
        monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    else:
        monkeypatch.delenv("JAVA_HOME", raising=False)

    def tripwire(*_a, **_k):
        raise AssertionError("the run started")

    monkeypatch.setattr(api, "run_chaos", tripwire)
    monkeypatch.setattr(process, "rerun_in_namespace", tripwire)
    monkeypatch.setattr(process, "cleanup", tripwire)
    t0 = time.monotonic()
    assert main(["chaos", *argv]) == code
    assert time.monotonic() - t0 < 5
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert word in err and "Traceback" not in err
    assert err.count("verifier:") == 1


def test_a_users_scenario_file_runs(tmp_path, monkeypatch):
    """--scenario PATH.toml: the user's own file, checked like ours, then run."""
    path = tmp_path / "mine.toml"
    path.write_text('description = "mine"\n[workload]\nduration_s = 5\n')
    seen = {}

    def run(prepared, **_hooks):  # collect, advice: verifier.cli.advise's
        seen["names"] = [s.name for s in prepared.scenarios]
        return 0

    monkeypatch.setattr(api, "run_chaos", run)
    monkeypatch.setattr(process, "cleanup", lambda: [])
    monkeypatch.setattr(process, "stop_on_signals", lambda: {})
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert main(["chaos", "--scenario", str(path), "--out", str(tmp_path / "out"),
                 "--spark-conf", "spark.cores.max=2"]) == 0
    assert seen["names"] == ["mine"]
    import json
    import os

    from streaming.session import CHAOS_CONF, SPARK_CONF_ENV
    # the tool's own defaults (C1-only JIT) and the user's settings, which win
    assert json.loads(os.environ.pop(SPARK_CONF_ENV)) == {**CHAOS_CONF, "spark.cores.max": "2"}
    assert main(["chaos", "--scenario", str(path), "--out", str(tmp_path / "out"),
                 "--spark-conf", "spark.driver.extraJavaOptions=-Xss4m"]) == 0
    assert json.loads(os.environ.pop(SPARK_CONF_ENV)) == {
        "spark.driver.extraJavaOptions": "-Xss4m"}


def test_a_signal_during_the_checks_says_so_and_leaves_nothing(tmp_path):
    """SIGTERM while the checks run (here: a "broker" that accepts and never answers the
    probe, which waits 5 s) stops the tool with one line and exit 130, at once."""
    probed = threading.Event()
    argv = [str(Path(sys.executable).with_name("verifier")), "chaos", "--scenario",
            "baseline", "--out", str(tmp_path / "out"), "--bootstrap-servers",
            _listener(None, probed)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert probed.wait(60), "the probe never came"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert time.monotonic() - t0 < 3
    assert "verifier: interrupted" in err and "Traceback" not in err
    out = tmp_path / "out"  # checked writable before the probe, and nothing in it
    assert not out.exists() or not any(out.iterdir())
