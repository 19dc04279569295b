"""`verifier chaos --repeat N` is checked before anything starts: N a whole number, 1 or
more, else a usage error (exit 64) naming the flag; a valid N reaches the run (issue 38)."""

from __future__ import annotations

import pytest

import verifier.api._process as process
from verifier import api
from verifier.cli import EXIT_USAGE, main


@pytest.fixture()
def started(monkeypatch) -> list:
    """What reached the run: (profile, scenario names, options) per call; nothing else
    starts (no cleanup, no namespace, no signal handlers)."""
    seen: list = []

    def run(prepared, **_hooks):  # collect, advice: verifier.cli.advise's
        seen.append((prepared.profile.name, [s.name for s in prepared.scenarios],
                     prepared.opts))
        return 0

    def tripwire(*_a, **_k):
        raise AssertionError("the run started")

    monkeypatch.setattr(api, "run_chaos", run)
    monkeypatch.setattr(process, "rerun_in_namespace", tripwire)
    monkeypatch.setattr(process, "cleanup", lambda: [])
    monkeypatch.setattr(process, "stop_on_signals", lambda: {})
    monkeypatch.delenv("JAVA_HOME", raising=False)
    return seen


@pytest.mark.parametrize("value", ["0", "-2", "2.5", "three", ""])
def test_a_bad_repeat_count_is_a_usage_error(value, started, tmp_path, capsys):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main(["chaos", "--scenario", "baseline", "--repeat", value, "--out", str(out)])
    assert exc.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert "argument --repeat: expected a whole number of runs per scenario, 1 or more: " \
           f"{value!r}" in err
    assert "Traceback" not in err
    assert started == [] and not out.exists()


def test_a_repeat_count_reaches_the_run_and_defaults_to_one(started, tmp_path):
    out = str(tmp_path / "out")
    assert main(["chaos", "--scenario", "baseline", "--repeat", "3", "--out", out]) == 0
    assert main(["chaos", "--scenario", "baseline", "--out", out]) == 0
    assert [(names, opts.repeat) for _, names, opts in started] == [(["baseline"], 3),
                                                                      (["baseline"], 1)]
    assert all(opts.repetition is None for _, _, opts in started)  # the matrix sets it
