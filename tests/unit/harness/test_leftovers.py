"""What a killed run left on an external cluster is known by its record and found by its
prefix; nothing else is ever touched (verifier.harness.leftovers, issue 48)."""

from __future__ import annotations

import json
import subprocess

import pytest

from verifier.harness import leftovers as L
from verifier.rundata.errors import UsageError

BS = "kafka.example:9092"
RUN = "verifier-baseline-20261129T150102Z-s1"


class _Env:
    name = "external"
    bootstrap_servers = BS
    keep_topics = False


def test_a_runs_record_is_kept_until_its_topics_are_settled(tmp_path):
    L.claim(_Env(), RUN, tmp_path)
    L.claim(type("Local", (), {"name": "local"})(), "verifier-x-20261129T150102Z-s1",
            tmp_path)
    mine = L.recorded(BS, tmp_path)
    assert mine.running and list(mine.running) == [RUN] and mine.dead == []
    L.release(BS, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_runs_of_a_tool_that_died_are_dead_and_kept_ones_are_not(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "1.json").write_text(json.dumps({
        "owner": {"pid": dead.pid, "start": 1},
        "runs": [{"run": RUN, "bootstrap_servers": BS, "keep": False},
                 {"run": "verifier-kept-20261129T150102Z-s1", "bootstrap_servers": BS,
                  "keep": True},
                 {"run": "verifier-other-20261129T150102Z-s1",
                  "bootstrap_servers": "elsewhere:9092", "keep": False}]}))
    mine = L.recorded(BS, tmp_path)
    assert mine.dead == [RUN] and not mine.running
    L.forget(BS, mine.records)
    left = json.loads((tmp_path / "1.json").read_text())["runs"]
    assert [r["bootstrap_servers"] for r in left] == ["elsewhere:9092"]


def test_names_are_grouped_by_run_and_every_other_name_is_left_out():
    names = [f"{RUN}.idempotent", f"{RUN}.transactional", "orders", "__consumer_offsets",
             "verifier-orders", f"{RUN}.spark-1f-7-executor"]
    assert L.group_by_run(names) == {RUN: [f"{RUN}.idempotent", f"{RUN}.spark-1f-7-executor",
                                           f"{RUN}.transactional"]}


class _Admin:
    def __init__(self):
        self.deleted: list = []

    def delete_topics(self, topics, timeout_ms):
        self.deleted += topics

    def delete_groups(self, groups):
        self.deleted += groups


def test_only_run_ids_of_this_tool_are_removed():
    found = L.OnCluster({RUN: [f"{RUN}.idempotent"]}, {RUN: [f"{RUN}.copier-0"]})
    a = _Admin()
    said = L.remove_runs(a, found, [RUN])
    assert a.deleted == [f"{RUN}.idempotent", f"{RUN}.copier-0"] and len(said) == 2
    for bad in ("orders", "baseline-20261129T150102Z-s1", "verifier-"):
        with pytest.raises(UsageError, match="not a run id of this tool"):
            L.remove_runs(a, L.OnCluster({bad: ["x"]}), [bad])
    assert len(a.deleted) == 2
