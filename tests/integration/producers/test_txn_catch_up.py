"""Every client's transactional generator keeps its rate when commits are slower than the
records they hold: a new transaction takes every record already due (up to 2 s of the
rate) instead of ``txn_size``, so the generator catches up instead of falling ever
further behind (the Java and librdkafka generators once ran one fixed-size transaction at
a time and reached a tenth of the rate under chaos load)."""

from __future__ import annotations

import pytest

from tests.integration.producers.helpers import client_generator, history, run_to_end
from verifier.harness.topics import create_topics

pytestmark = pytest.mark.integration

N, RATE, TXN_SIZE = 1500, 1500.0, 10  # 10 records are worth 7 ms: less than any commit


@pytest.mark.parametrize("client", ["kafka-python", "java", "librdkafka"])
def test_slow_commits_are_caught_up_by_larger_transactions(bootstrap, topic_name, tmp_path,
                                                           client):
    create_topics(bootstrap, {topic_name: 3}, replication_factor=3)
    pid = f"catch-up-{client}"
    run_to_end(client_generator(client, tmp_path, bootstrap, topic_name, "transactional",
                                pid, "--count", str(N),
                        "--rate", f"{RATE:g}", "--txn-size", str(TXN_SIZE),
                        "--abort-fraction", "0"), timeout=180)
    h = history(tmp_path, pid)
    sizes = [len(e["recs"]) for e in h.events
             if e["type"] == "invoke" and e["f"] == "begin"]
    commits = [e for e in h.events if e["type"] == "ok" and e["f"] == "commit"]
    assert sum(sizes) == N and len(commits) == len(sizes), (sizes, len(commits))
    # behind after the first commit: later transactions hold what is due, never more than
    # two seconds of the rate
    assert max(sizes) > TXN_SIZE, sizes
    assert max(sizes) <= 2 * RATE, sizes
    assert len(sizes) < N // TXN_SIZE, sizes
