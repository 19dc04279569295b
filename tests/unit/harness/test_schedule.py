"""Fault specs are validated up front; the same seed gives the same schedule."""

from __future__ import annotations

import json

import pytest

from verifier.harness.faults.spec import build_schedule, load_schedule, load_specs, parse_spec
from verifier.rundata.errors import UsageError

SPECS = [
    {"kind": "ack-loss", "target": {"node": 1}, "start": [0, 10], "duration": [2, 5],
     "params": {"probability": 0.2}},
    {"kind": "broker-kill", "target": {"leader": {"topic": "t", "partition": 0}},
     "start": [5, 20], "duration": 5},
    {"kind": "latency", "target": {"all": True}, "start": 1, "duration": 3,
     "params": {"ms": 200}},
    {"kind": "producer-kill", "target": {"process": "idempotent-0"}, "start": [0, 25],
     "duration": [1, 4]},
    {"kind": "broker-pause", "target": {"coordinator": {"transactional_id": "tx"}},
     "start": 3, "duration": 2},
]


def _write(tmp_path, data, name="faults.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_same_seed_same_schedule_other_seed_other_schedule(tmp_path):
    path = _write(tmp_path, {"faults": SPECS})
    a = load_schedule(path, seed=42, run_seconds=60, node_ids=[1, 2, 3])
    b = load_schedule(path, seed=42, run_seconds=60, node_ids=[1, 2, 3])
    c = load_schedule(path, seed=43, run_seconds=60, node_ids=[1, 2, 3])
    assert a.to_json() == b.to_json()
    assert a.timeline() == b.timeline()
    assert a.to_json()["faults"] != c.to_json()["faults"]
    assert [f.id for f in a.faults] == [1, 2, 3, 4, 5]
    assert [f.start for f in a.faults] == sorted(f.start for f in a.faults)
    ack = next(f for f in a.faults if f.kind == "ack-loss")
    assert "seed" in ack.params  # the proxy's drop decisions are seeded by the schedule


def test_toml_spec_file(tmp_path):
    path = _write(tmp_path, '[[faults]]\nkind = "blackhole"\ntarget = {node = 2}\n'
                  'start = 1\nduration = 2\n', name="faults.toml")
    (spec,) = load_specs(path, node_ids=[1, 2, 3])
    assert (spec.kind, spec.target, spec.start, spec.duration) == (
        "blackhole", {"node": 2}, 1.0, 2.0)


def test_timeline_heals_before_starts_at_equal_times():
    specs = [parse_spec({"kind": "blackhole", "target": {"node": 1}, "start": 0,
                         "duration": 2}, "a"),
             parse_spec({"kind": "reset", "target": {"node": 1}, "start": 2,
                         "duration": 1}, "b")]
    timeline = build_schedule(specs, seed=1, run_seconds=10).timeline()
    assert [(t, action, f.id) for t, action, f in timeline] == [
        (0.0, "start", 1), (2.0, "heal", 1), (2.0, "start", 2), (3.0, "heal", 2)]


@pytest.mark.parametrize(("entry", "message"), [
    ({"kind": "meteor", "target": {"node": 1}, "start": 0, "duration": 1}, "unknown fault kind"),
    ({"kind": "broker-kill", "target": {"rack": "a"}, "start": 0, "duration": 1},
     "unknown target"),
    ({"kind": "broker-kill", "target": {"node": 7}, "start": 0, "duration": 1}, "node 7"),
    ({"kind": "broker-kill", "target": {"all": True}, "start": 0, "duration": 1},
     "only for proxy"),
    ({"kind": "producer-kill", "target": {"process": "ghost"}, "start": 0, "duration": 1},
     "unknown process"),
    ({"kind": "ack-loss", "target": {"node": 1}, "start": 0, "duration": 1,
      "params": {"next": 1, "every": 2}}, "exactly one"),
    ({"kind": "broker-pause", "target": {"node": 1}, "start": 0, "duration": 1,
      "params": {"x": 1}}, "takes no params"),
    ({"kind": "blackhole", "target": {"node": 1}, "start": -1, "duration": 1}, "start"),
    ({"kind": "blackhole", "target": {"node": 1}, "start": 0, "duration": 0}, "duration"),
    ({"kind": "blackhole", "target": {"node": 1}, "start": [5, 1], "duration": 1}, "start"),
    ({"kind": "blackhole", "target": {"node": 1}, "begin": 0, "duration": 1}, "unknown fields"),
])
def test_bad_specs_are_usage_errors(entry, message):
    with pytest.raises(UsageError, match=message):
        parse_spec(entry, "spec", node_ids=[1, 2, 3], processes={"idempotent-0"})


def test_schedule_longer_than_the_run(tmp_path):
    path = _write(tmp_path, [{"kind": "blackhole", "target": {"node": 1},
                              "start": [10, 50], "duration": 15}])
    with pytest.raises(UsageError, match="after the 60s run"):
        load_schedule(path, seed=1, run_seconds=60)


@pytest.mark.parametrize("text", ["{not json", '{"faults": 3}', '"faults"'])
def test_malformed_spec_file(tmp_path, text):
    with pytest.raises(UsageError, match="faults.json"):
        load_specs(_write(tmp_path, text))


def test_missing_spec_file(tmp_path):
    with pytest.raises(UsageError, match="cannot read"):
        load_specs(tmp_path / "nope.json")
