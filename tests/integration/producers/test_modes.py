"""Each mode, as its own process, writes N records; every ``ok`` offset holds exactly the
record the history says."""

from __future__ import annotations

import pytest

from producers.config import MODES
from tests.integration.producers.helpers import generator, history, read_log, run_to_end
from verifier.harness.topics import create_topics

pytestmark = pytest.mark.integration

N = 300


@pytest.mark.parametrize("mode", MODES)
def test_every_ok_offset_holds_the_record_the_history_names(bootstrap, topic_name, tmp_path,
                                                            mode):
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    pid = f"{mode}-0"
    extra = ["--txn-size", "25", "--abort-fraction", "0.25", "--seed", "3"] \
        if mode == "transactional" else []
    run_to_end(generator(pid, tmp_path, bootstrap, topic_name, mode, pid, "--count", str(N),
                         "--record-size", "300", *extra))

    h = history(tmp_path, pid)
    assert h.header["mode"] == mode and h.sessions == [1] and not h.torn_tail
    invokes = [e for e in h.events if e["type"] == "invoke" and e["f"] == "send"]
    oks = [e for e in h.events if e["type"] == "ok" and e["f"] == "send"]
    assert len(invokes) == N
    assert len(oks) == N, "a healthy cluster acknowledges every send"
    assert {(e["p"], e["seq"]) for e in oks} == {(e["p"], e["seq"]) for e in invokes}
    # dense sequence per partition, round robin over all three partitions
    for p in range(3):
        assert sorted(e["seq"] for e in invokes if e["p"] == p) == list(range(N // 3))

    log = {(p, off): rid for p, off, rid in read_log(bootstrap, topic_name, "read_uncommitted")}
    for e in oks:
        rid = log.get((e["p"], e["offset"]))
        assert rid is not None, f"no record at partition {e['p']} offset {e['offset']}"
        assert (rid.run, rid.pid, rid.ses, rid.p, rid.seq, rid.txn) == \
            ("it", pid, 1, e["p"], e["seq"], e["txn"])
    assert len(log) == N
    if mode == "transactional":
        ends = [e for e in h.events if e.get("f") in ("commit", "abort") and e["type"] == "ok"]
        # abort decisions are seeded: with seed 3 the first transaction aborts
        assert {e["f"] for e in ends} == {"commit", "abort"}, "seeded: some of each"
