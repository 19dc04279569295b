"""A pipeline's hold marker and its written file (verifier.rundata.pipelines): written
whole by the hold and the driver, read by the fault triggers."""

from __future__ import annotations

import os

from verifier.rundata.pipelines import (
    PipelineLayout,
    parse_marker,
    read_marker,
    write_marker,
    write_written,
    written_path,
)


def test_a_marker_reads_back_with_its_batch_place_and_process(tmp_path):
    where = PipelineLayout(tmp_path, "p")
    where.root.mkdir(parents=True)
    assert read_marker(where.holding) is None
    write_marker(where.holding, 4, "task", {"task": "3.0.1"})
    got = read_marker(where.holding)
    assert got["batch"] == 4 and got["where"] == "task" and got["task"] == "3.0.1"
    assert got["pid"] == os.getpid() and got["t"] > 0
    assert [p.name for p in where.root.iterdir()] == ["holding"]  # no temporary file left


def test_the_drivers_word_sits_beside_the_marker(tmp_path):
    marker = tmp_path / "holding"
    write_written(marker, 7)
    assert written_path(marker) == tmp_path / "holding.written"
    assert read_marker(written_path(marker))["batch"] == 7


def test_what_is_not_a_marker_reads_as_none():
    assert parse_marker("") is None
    assert parse_marker("1795314893.123\n") is None  # an older plain timestamp
    assert parse_marker('{"batch": 1}') is None
