"""The generators' planner (producers/generator.py): round robin, dense sequences."""

from __future__ import annotations

from producers.generator import Planner


def test_take_gives_what_next_gives_in_the_same_order():
    """``take(k)`` (the plain loop's chunk) is ``k`` calls of ``next()``, also resumed
    (sequences continue each partition) and mixed with ``next()`` calls."""
    by_next, by_take = Planner((0, 2, 5), {2: 7}), Planner((0, 2, 5), {2: 7})
    expected = [by_next.next() for _ in range(11)]
    got = by_take.take(4) + [by_take.next()] + by_take.take(6)
    assert got == expected
    assert got[:4] == [(0, 0), (2, 7), (5, 0), (0, 1)]
    assert by_take.take(0) == [] and by_take.next() == by_next.next()
