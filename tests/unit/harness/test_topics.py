"""Topic creation retries while brokers are still registering with the controller."""

from __future__ import annotations

import kafka.errors as KE
import pytest

from verifier.harness.topics import create_while_brokers_register


class Admin:
    """Stands in for KafkaAdminClient: refuses the replication factor ``refusals`` times,
    creating the first topic of the request before refusing (a partial success)."""

    def __init__(self, refusals: int, existing=(), partial: bool = True):
        self.topics = set(existing)
        self.partial = partial
        self.refusals = refusals
        self.requests: list[list[str]] = []

    def list_topics(self):
        return sorted(self.topics)

    def create_topics(self, new, timeout_ms):
        names = [t.name for t in new]
        self.requests.append(names)
        if self.topics & set(names):
            raise KE.TopicAlreadyExistsError(sorted(self.topics & set(names)))
        if self.refusals:
            self.refusals -= 1
            if self.partial:
                self.topics.add(names[0])
            raise KE.InvalidReplicationFactorError("broker not registered yet")
        self.topics.update(names)


def test_refused_replication_factor_is_retried_creating_only_what_is_missing():
    a = Admin(refusals=2)
    create_while_brokers_register(a, {"a": 3, "b": 3, "c": 3}, 3, None, timeout=10)
    assert a.topics == {"a", "b", "c"}
    assert a.requests == [["a", "b", "c"], ["b", "c"], ["c"]]


def test_a_topic_that_existed_before_is_still_an_error():
    with pytest.raises(KE.TopicAlreadyExistsError):
        create_while_brokers_register(Admin(0, existing={"a"}), {"a": 3}, 3, None, timeout=5)


def test_refusals_past_the_deadline_raise_the_brokers_error():
    with pytest.raises(KE.InvalidReplicationFactorError):
        create_while_brokers_register(Admin(10**6, partial=False), {"a": 3}, 3, None,
                                      timeout=1)
