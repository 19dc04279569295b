"""Each mode, as its own process, writes N records; every ``ok`` offset holds exactly the
record the history says."""

from __future__ import annotations

import pytest

from producers.config import MODES
from tests.integration.producers.helpers import check_one_clean_session, generator, run_to_end
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

    check_one_clean_session(tmp_path, bootstrap, topic_name, mode, pid, N)


def test_a_topic_that_does_not_exist_ends_in_one_clear_line(bootstrap, topic_name, tmp_path):
    proc = generator("missing", tmp_path, bootstrap, f"{topic_name}-missing", "idempotent",
                     "missing-0", "--count", "10", "--set", "max.block.ms=3000")
    proc.start()
    rc = proc.wait(60)
    log = proc.log_tail(40)
    assert rc == 2, log
    assert f"topic {topic_name}-missing not found at {bootstrap}" in log, log
    assert "Traceback" not in log, log
