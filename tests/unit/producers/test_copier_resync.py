"""The copier continues from its group's committed offsets after each commit (what a
copier restarted then would do): a committed offset past its position skips input."""

from __future__ import annotations

from kafka import TopicPartition

from producers.copier import resync


class _Consumer:
    def __init__(self, committed: dict, position: dict, fail=()):
        self._committed, self._position, self._fail = committed, position, set(fail)
        self.seeks = []

    def committed(self, tp, timeout_ms=None):
        if tp.partition in self._fail:
            raise TimeoutError("no answer")
        return self._committed.get(tp.partition)

    def position(self, tp, timeout_ms=None):
        return self._position[tp.partition]

    def seek(self, tp, offset):
        self.seeks.append((tp.partition, offset))


TPS = [TopicPartition("in", p) for p in range(3)]


def test_committed_offsets_equal_to_the_positions_change_nothing():
    c = _Consumer({0: 5, 1: 7}, {0: 5, 1: 7, 2: 0})  # partition 2: nothing committed yet
    resync(c, TPS, 1000)
    assert c.seeks == []


def test_a_committed_offset_past_the_position_is_followed(capsys):
    # KAFKA-15449: an aborted transaction's late offsets committed by the next commit
    c = _Consumer({0: 5, 1: 12, 2: 3}, {0: 5, 1: 7, 2: 3})
    resync(c, TPS, 1000)
    assert c.seeks == [(1, 12)]
    assert "position 7, committed 12" in capsys.readouterr().out


def test_a_failed_fetch_leaves_the_position(capsys):
    c = _Consumer({0: 9}, {0: 5, 1: 1, 2: 1}, fail={0})
    resync(c, TPS, 1000)
    assert c.seeks == []
    assert "TimeoutError" in capsys.readouterr().out
