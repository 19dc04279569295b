"""Every name a run creates on a cluster carries the run's prefix (verifier.rundata.naming)."""

from __future__ import annotations

from verifier.rundata.naming import (
    MARK,
    id_notes,
    is_run_id,
    own_ids,
    run_id,
    run_of,
    spark_source_options,
)

RUN = run_id("ack-loss", "20261129T150102Z", 1)


def test_a_run_id_starts_with_the_mark_and_has_the_run_shape():
    assert RUN == "verifier-ack-loss-20261129T150102Z-s1"
    assert RUN.startswith(MARK) and is_run_id(RUN)
    assert is_run_id(run_id("my scenario.v2", "20261129T150102Z-rep2of3", -4))
    for other in ("ack-loss-20261129T150102Z-s1", "verifier-ack-loss", "orders",
                  "verifier-x-2026-s1"):
        assert not is_run_id(other), other


def test_the_run_of_a_name_is_found_and_a_users_name_has_none():
    assert run_of(f"{RUN}.idempotent") == RUN
    assert run_of(f"{RUN}.transactional-0") == RUN
    assert run_of(f"{RUN}.orders-tx.v2") == RUN  # the user's id, dots and all, as suffix
    assert run_of(f"{RUN}.spark-0b1c-1234-executor") == RUN
    for name in ("orders", RUN, f"{RUN}x.idempotent", "verifier-orders.events",
                 "__consumer_offsets", f"x{RUN}.idempotent"):
        assert run_of(name) is None, name


def test_the_users_ids_run_with_the_prefix_and_the_rest_as_it_is():
    given = {"transactional_id": "orders-tx", "acks": -1, "linger_ms": 5}
    assert own_ids(given, RUN) == {"transactional_id": f"{RUN}.orders-tx", "acks": -1,
                                   "linger_ms": 5}
    java = {"transactional.id": "orders-tx", "group.id": "billing"}
    assert own_ids(java, RUN) == {"transactional.id": f"{RUN}.orders-tx",
                                  "group.id": f"{RUN}.billing"}
    assert own_ids(own_ids(java, RUN), RUN) == own_ids(java, RUN)  # once only
    assert given == {"transactional_id": "orders-tx", "acks": -1, "linger_ms": 5}


def test_use_my_ids_keeps_them_and_says_what_it_risks():
    given = {"transactional_id": "orders-tx"}
    assert own_ids(given, RUN, use_mine=True) == given
    (note,) = id_notes(given, use_mine=True)
    assert "orders-tx" in note and "fenced" in note and "--use-my-ids" in note
    (note,) = id_notes(given)
    assert "<run id>.orders-tx" in note
    assert id_notes({"acks": -1}) == []


def test_the_spark_readers_groups_carry_the_prefix():
    assert spark_source_options(RUN) == {"groupIdPrefix": f"{RUN}.spark"}
    assert run_of(spark_source_options(RUN)["groupIdPrefix"] + "-uuid-42") == RUN
