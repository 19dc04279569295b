"""The registry of fault kinds (verifier.harness.faults.kinds): the kinds the nemesis runs
are the kinds the verdict judges, each declares what it needs, and the environments'
skip lists, the schedule's checks and the triggers follow from those declarations."""

from __future__ import annotations

import pytest

from verifier.harness.environment import ExternalEnvironment, LocalEnvironment
from verifier.harness.faults import kinds
from verifier.harness.faults.kinds import FaultEnv
from verifier.harness.faults.kinds.base import Kind, process_target
from verifier.harness.faults.spec import build_schedule, parse_spec
from verifier.harness.faults.triggers import NAMES as TRIGGERS
from verifier.judge import faults as judged
from verifier.judge.faults import process as judged_process
from verifier.rundata.errors import UsageError

PROXY = {"ack-loss", "latency", "blackhole", "reset", "hold", "error-answer"}
BROKER = {"broker-kill", "broker-pause", "network-partition", "group-coordinator-kill"}


def test_the_runnable_kinds_are_the_judged_kinds_in_one_order():
    assert kinds.NAMES == judged.KINDS
    for name, kind in kinds.KINDS.items():
        assert judged.family_of(name) is kind.family, name
        assert set(kind.triggers) <= set(TRIGGERS), name


def test_a_kind_its_family_does_not_name_is_refused():
    """A runnable kind the verdict would not know (it would concern no column) cannot
    even be declared."""
    with pytest.raises(ValueError, match="not one of the process family"):
        Kind("disk-full", judged_process.FAMILY, lambda *a: {}, lambda *a: {},
             process_target)


def test_each_trigger_is_taken_by_the_kinds_that_declare_it():
    assert kinds.TRIGGER_TAKERS == {
        "mid-batch": ("process-kill", "checkpoint-lost", "executor-kill", "worker-kill"),
        "in-transaction": ("producer-kill", "process-kill"),
        "copy-committed": ("producer-kill",),
        "appended": ("ack-loss",), "held": ("hold",), "pipelines-down": ("retention",),
        "batch-planned": ("process-kill",), "every-column": ("observer-kill",),
        "at-risk": ("instance-kill", "instance-pause"), "forged": ("error-answer",)}
    with pytest.raises(UsageError, match="trigger 'mid-batch' applies to process-kill, "
                                         "checkpoint-lost, executor-kill, worker-kill, "
                                         "not observer-kill"):
        parse_spec({"kind": "observer-kill", "target": {"process": "observer"}, "start": 1,
                    "duration": 1, "params": {"trigger": "mid-batch"}}, "s")


def test_the_environments_skip_the_kinds_whose_part_they_lack(tmp_path):
    """The skip lists follow from what each kind needs: an external cluster has no proxy,
    no broker processes and no network namespace here; broker-config (the admin API)
    and the process faults run anywhere."""
    assert ExternalEnvironment("localhost:1").skipped_kinds() == PROXY | BROKER
    assert LocalEnvironment(tmp_path).skipped_kinds() == {"network-partition"}
    assert LocalEnvironment(tmp_path, partitions=True).skipped_kinds() == set()
    assert kinds.skipped({"proxy", "cluster", "partition"}) == set()


def test_a_schedule_needs_the_parts_its_kinds_act_on():
    with pytest.raises(UsageError, match=r"fault kinds \['broker-kill'\] need a cluster"):
        kinds.check_env({"broker-kill", "broker-config"}, FaultEnv("x:1"))
    with pytest.raises(UsageError, match=r"fault kinds \['ack-loss', 'hold'\] need a proxy"):
        kinds.check_env({"ack-loss", "hold", "process-kill"}, FaultEnv("x:1", cluster=object()))
    kinds.check_env({"broker-config", "retention", "process-kill"}, FaultEnv("x:1"))


def test_only_the_kinds_that_draw_take_from_the_schedule_s_seed():
    """A probabilistic ack loss gets its rule's seed from the schedule's generator, in spec
    order; a latency rule with a probability (ignored by the proxy) draws nothing, so the
    faults after it keep their times."""
    def spec(kind, params, start):
        return parse_spec({"kind": kind, "target": {"all": True}, "start": start,
                           "duration": 1, "params": params}, "s")

    loss = spec("ack-loss", {"probability": 0.5}, 1)
    later = parse_spec({"kind": "latency", "target": {"all": True}, "start": [2, 3],
                        "duration": 1, "params": {"ms": 5, "probability": 0.5}}, "s")
    a = build_schedule([loss, later], seed=7, run_seconds=10).faults
    b = build_schedule([spec("ack-loss", {"probability": 0.5, "seed": 3}, 1), later],
                       seed=7, run_seconds=10).faults
    assert isinstance(a[0].params["seed"], int) and "seed" not in a[1].params
    assert b[0].params["seed"] == 3
    assert a[1].start != b[1].start  # the ack loss's draw came first in a only


def test_a_kind_without_a_readiness_check_is_never_held_back():
    fault = build_schedule([parse_spec({"kind": "broker-config", "target": {"all": True},
                                        "start": 1, "duration": 1,
                                        "params": {"settings": {"a": "1"}}}, "s")],
                           seed=1, run_seconds=5).faults[0]
    assert kinds.not_ready(fault, FaultEnv("x:1")) is None
    assert kinds.KINDS["broker-config"].on_brokers and kinds.KINDS["broker-kill"].on_brokers
    assert not kinds.KINDS["network-partition"].on_brokers


def test_an_error_answer_is_a_proxy_rule_whose_names_are_checked_before_anything_starts():
    """Its params are the error_answer rule's: Kafka's error and API names, a variant; a
    name Kafka does not have, or a replaced answer with an error no broker that did the
    work gives, is a usage error (exit 64) when the scenario is read; a probability
    without a seed gets one from the schedule's."""
    def spec(**params):
        return parse_spec({"kind": "error-answer", "target": {"all": True}, "start": 1,
                           "duration": 5, "params": params}, "s")

    kind = kinds.KINDS["error-answer"]
    assert (kind.rule, kind.needs, kind.triggers) == ("error_answer", "proxy", ("forged",))
    ok = spec(api="produce", error="NOT_LEADER_OR_FOLLOWER", variant="refuse",
              probability=0.2, trigger="forged")
    assert isinstance(build_schedule([ok], seed=3, run_seconds=9).faults[0].params["seed"], int)
    spec(api=["end-txn", "add-partitions-to-txn"], error="CONCURRENT_TRANSACTIONS",
         variant="replace", next=2, transactional_id="r.tx-0")
    for params, why in (
            (dict(error="NOT_LEADER", variant="refuse", next=1), "Kafka's error names"),
            (dict(error="REQUEST_TIMED_OUT", variant="drop", next=1), "variant must be"),
            (dict(error="MESSAGE_TOO_LARGE", variant="replace", next=1), "retriable"),
            (dict(api="fetch", error="REQUEST_TIMED_OUT", variant="refuse", next=1),
             "api must be one of"),
            (dict(error="REQUEST_TIMED_OUT", variant="refuse"), "exactly one of")):
        with pytest.raises(UsageError, match=why) as exc:
            spec(**params)
        assert exc.value.exit_code == 64
